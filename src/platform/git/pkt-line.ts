/**
 * Git's pkt-line framing (gitprotocol-common): four hex digits of length (including themselves),
 * then the payload; `0000` is a flush. Side-band packets carry a band byte first: 1 data,
 * 2 progress (printed by the client as `remote: ...`), 3 a fatal error.
 */
export const FLUSH = Buffer.from('0000');
/** Largest payload of a side-band-64k packet (65520 bytes with the length and band byte). */
const MAX_SIDEBAND_PAYLOAD = 65515;

export function pkt(data: string | Buffer): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}

/** One packet on a side band, cut to what a packet can carry. */
export function bandPkt(band: 1 | 2 | 3, data: string | Buffer): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  return pkt(Buffer.concat([Buffer.from([band]), body.subarray(0, MAX_SIDEBAND_PAYLOAD)]));
}

export type Packet = { kind: 'data'; payload: Buffer; raw: Buffer } | { kind: 'flush' | 'delim' | 'end'; raw: Buffer };

/** Splits a byte stream into packets as its chunks arrive (at most one packet's bytes are held). */
export class PktReader {
  private held: Buffer = Buffer.alloc(0);

  /** Packets completed by `chunk`; throws on a length that is not pkt-line framing. */
  push(chunk: Buffer): Packet[] {
    this.held = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    const packets: Packet[] = [];
    while (this.held.length >= 4) {
      const head = this.held.subarray(0, 4).toString('latin1');
      if (!/^[0-9a-f]{4}$/i.test(head)) throw new Error('not pkt-line framing');
      const length = parseInt(head, 16);
      if (length < 4) {
        packets.push({ kind: length === 0 ? 'flush' : length === 1 ? 'delim' : 'end', raw: this.held.subarray(0, 4) });
        this.held = this.held.subarray(4);
        continue;
      }
      if (this.held.length < length) break;
      packets.push({ kind: 'data', payload: this.held.subarray(4, length), raw: this.held.subarray(0, length) });
      this.held = this.held.subarray(length);
    }
    return packets;
  }

  /** Bytes received that do not make a whole packet yet. */
  get pending(): number {
    return this.held.length;
  }
}

/** A ref update of a push: `old new ref`. */
export interface RefUpdate {
  oldSha: string;
  newSha: string;
  ref: string;
}

export const ZERO_SHA = /^0{40}$/;

/**
 * The commands at the head of a receive-pack request (up to its first flush) and the
 * capabilities the client asked for; null when `head` does not hold them all.
 */
export function parsePushCommands(head: Buffer): { updates: RefUpdate[]; capabilities: Set<string> } | null {
  const updates: RefUpdate[] = [];
  let capabilities = new Set<string>();
  // Packets one by one up to the flush: the pack that follows is not pkt-line framed.
  for (let at = 0; at + 4 <= head.length;) {
    const size = /^[0-9a-f]{4}$/i.test(head.toString('latin1', at, at + 4)) ? parseInt(head.toString('latin1', at, at + 4), 16) : -1;
    if (size === 0) return { updates, capabilities };
    if (size < 4 || at + size > head.length) return null;
    let line = head.toString('latin1', at + 4, at + size).replace(/\n$/, '');
    at += size;
    const nul = line.indexOf('\0');
    if (nul >= 0) {
      capabilities = new Set(
        line
          .slice(nul + 1)
          .split(' ')
          .filter(Boolean),
      );
      line = line.slice(0, nul);
    }
    if (line.startsWith('shallow ')) continue;
    const match = /^([0-9a-f]{40}) ([0-9a-f]{40}) (\S+)$/.exec(line);
    if (!match) return null;
    updates.push({ oldSha: match[1]!, newSha: match[2]!, ref: match[3]! });
  }
  return null;
}

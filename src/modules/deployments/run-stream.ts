/**
 * The response of an attached run (`POST /applications/{id}/runs/attach`): frames of one type
 * byte, a 4-byte big-endian length and that many bytes. The request body is the command's
 * standard input as it is, its end the input's end.
 */
export const RUN_STREAM_TYPE = 'application/vnd.slipway.run-stream';

export const RUN_FRAME = { stdout: 1, stderr: 2, end: 3 } as const;

export function runFrame(type: number, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const head = Buffer.alloc(5);
  head.writeUInt8(type, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

import { createServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import type { AuthContext, Connection, ServerChannel, Session, Server as SshServer } from 'ssh2';
import type { Principal } from '../../platform/http/types.js';
import { AppError } from '../../platform/errors.js';
import type { InstanceExecService } from '../instance-exec/index.js';
import type { SshKeysService } from '../ssh-keys/index.js';
import { PushRefused, type GitPushService } from '../git-push/index.js';
import { loadHostKey } from './host-key.js';

/**
 * Bounds of one connection (authentication attempts, channels at once, silence before it is closed) and of the
 * gateway: connections in all, and from one address, so that one source cannot take every slot.
 */
export const SSH_LIMITS = {
  authAttempts: 10,
  channels: 4,
  connections: 200,
  connectionsPerAddress: 32,
  handshakeMs: 30_000,
  goodbyeMs: 5_000,
  idleMs: 30 * 60_000,
} as const;

/** Whom a connection counts against: its IPv4 address, or the /64 of an IPv6 one (what one host is usually given). */
export function sourceOf(address: string): string {
  const v4 = /^(?:::ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const groups = head ? head.split(':') : [];
  const missing = 8 - groups.length - (tail ? tail.split(':').length : 0);
  const full = [...groups, ...Array(Math.max(0, missing)).fill('0'), ...(tail ? tail.split(':') : [])];
  return `${full
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

const TOKEN_USER = /^token:([A-Za-z0-9_-]{10,200})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** `git-receive-pack '/git/<application id>.git'` (the HTTP remote's path) or `'/ORG/PROJECT/APP.git'`. */
const GIT_COMMAND = /^git[ -](receive-pack|upload-pack) '?\/?([A-Za-z0-9._/-]{1,300}?)\/?'?$/;

export interface SshGatewayDeps {
  config: { SSH_PORT: number; HOST: string; dataDir: string };
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  exec: InstanceExecService;
  gitPush: GitPushService;
  sshKeys: SshKeysService;
  /** The application of `org/project/app` slugs when the user is a member; its id. */
  applicationBySlugs: (userId: string, org: string, project: string, app: string) => Promise<string>;
}

type Who = { kind: 'token'; token: string } | { kind: 'user'; principal: Principal } | null;

/**
 * The SSH gateway (issues 29 and 34), off unless SSH_PORT is set. Two doors, chosen by who logs in:
 * `token:<token>` (Ancla's `ancla ssh`/`ancla shell`) attaches the exec session the token was
 * issued for, onto the exec core; any other user name authenticates with a registered public key
 * and may only run `git-receive-pack` on an application's repository (`git push`).
 */
export class SshGateway {
  private server: TcpServer | null = null;
  private readonly clients = new Set<Connection>();
  /** Open TCP connections by remote address, counted before the SSH protocol starts. */
  private readonly perAddress = new Map<string, number>();
  /** Sockets that have not sent their identification line yet, by `address:port`: closed if they stay silent. */
  private readonly silent = new Map<string, NodeJS.Timeout>();
  private readonly sockets = new Map<string, Socket>();
  private port = 0;
  private parseKey: (typeof import('ssh2'))['utils']['parseKey'] = () => new Error('the SSH gateway has not started');

  constructor(private readonly deps: SshGatewayDeps) {}

  /** The port it listens on (SSH_PORT, or the one the system chose). */
  get listeningPort() {
    return this.port;
  }

  async start() {
    // ssh2 is loaded only when the gateway starts (SSH_PORT set): its WebAssembly ciphers hold 16 MiB.
    const { default: ssh2 } = await import('ssh2');
    this.parseKey = ssh2.utils.parseKey;
    const { privateKey, fingerprint } = await loadHostKey(this.deps.config.dataDir);
    const ssh = new ssh2.Server({ hostKeys: [privateKey], ident: 'Slipway' }, (client, info) =>
      this.connection(client, `${info.ip}:${info.port}`),
    );
    ssh.maxConnections = SSH_LIMITS.connections;
    ssh.on('error', (err: Error) => this.deps.logger.warn({ err }, 'ssh gateway error'));
    // Our own listener counts sockets by address before ssh2 sees them: ssh2 only reports a connection once its
    // identification line arrived, so a silent socket would otherwise hold a slot (and a descriptor) for ever.
    const server = createServer((socket) => this.admit(socket, ssh));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.deps.config.SSH_PORT, this.deps.config.HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.deps.logger.info(
      { port: this.port, host_key: fingerprint },
      `SSH gateway listening on port ${this.port}; host key ${fingerprint}`,
    );
  }

  async stop() {
    for (const client of this.clients) client.end();
    for (const timer of this.silent.values()) clearTimeout(timer);
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private admit(socket: Socket, ssh: SshServer) {
    const address = sourceOf(socket.remoteAddress ?? '');
    const open = this.perAddress.get(address) ?? 0;
    if (open >= SSH_LIMITS.connectionsPerAddress) return socket.destroy();
    this.perAddress.set(address, open + 1);
    const key = `${socket.remoteAddress}:${socket.remotePort}`;
    this.sockets.set(key, socket);
    this.silent.set(
      key,
      setTimeout(() => socket.destroy(), SSH_LIMITS.handshakeMs),
    );
    socket.once('close', () => {
      clearTimeout(this.silent.get(key));
      this.silent.delete(key);
      this.sockets.delete(key);
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    ssh.injectSocket(socket);
  }

  private connection(client: Connection, socketKey: string) {
    clearTimeout(this.silent.get(socketKey));
    this.silent.delete(socketKey);
    this.clients.add(client);
    const socket = this.sockets.get(socketKey);
    // end() only says goodbye; a client that never closes its side would keep its slot: cut it off soon after.
    const hangUp = () => {
      client.end();
      setTimeout(() => socket?.destroy(), SSH_LIMITS.goodbyeMs).unref();
    };
    let who: Who = null;
    let attempts = 0;
    let channels = 0;
    let idle = setTimeout(hangUp, SSH_LIMITS.handshakeMs);
    const active = () => {
      clearTimeout(idle);
      idle = setTimeout(hangUp, SSH_LIMITS.idleMs);
    };
    client.on('error', () => {});
    client.on('close', () => {
      clearTimeout(idle);
      this.clients.delete(client);
    });
    client.on('authentication', (ctx) => {
      if (++attempts > SSH_LIMITS.authAttempts) return hangUp();
      this.authenticate(ctx).then(
        (found) => {
          if (found) who = found;
        },
        () => ctx.reject(),
      );
    });
    client.on('ready', () => {
      active();
      client.on('session', (accept, reject) => {
        if (channels >= SSH_LIMITS.channels || !who) return reject();
        channels++;
        const session = accept();
        session.once('close', () => channels--);
        this.session(session, who, active);
      });
    });
  }

  /** Resolves the caller once accepted (null: refused, the reason told through keyboard-interactive). */
  private async authenticate(ctx: AuthContext): Promise<Who> {
    const token = TOKEN_USER.exec(ctx.username)?.[1];
    if (token) {
      // Checked here, and claimed (once) when its session is attached.
      if (!(await this.deps.exec.sshTokenWaits(token)))
        return refuseWithReason(ctx, 'this exec token is unknown, used already or expired: ask for a new one (ancla ssh)');
      ctx.accept();
      return { kind: 'token', token };
    }
    if (ctx.username.startsWith('token:')) return refuseWithReason(ctx, 'this exec token is malformed');
    if (ctx.method === 'publickey') {
      const user = await this.deps.sshKeys.userOfKey(ctx.key.data);
      const key = user && this.parseKey(ctx.key.data);
      if (!user || !key || key instanceof Error || Array.isArray(key)) {
        // Unknown keys: the client may hold a registered one yet, then it falls back to keyboard-interactive, which says why.
        ctx.reject(['publickey', 'keyboard-interactive']);
        return null;
      }
      if (!ctx.signature) {
        ctx.accept(); // "this key would do": the client signs next
        return null;
      }
      if (key.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) !== true) {
        ctx.reject(['publickey', 'keyboard-interactive']);
        return null;
      }
      ctx.accept();
      const { keyId, ...identity } = user;
      // An SSH key acts as its user, as a session does (no scoped key is involved); its id names the credential.
      return { kind: 'user', principal: { user: identity, via: 'session', credentialId: keyId } };
    }
    if (ctx.method === 'keyboard-interactive')
      return refuseWithReason(
        ctx,
        'none of the offered SSH keys is registered with this server: add yours with `slipway ssh-keys add ~/.ssh/id_ed25519.pub`',
      );
    ctx.reject(['publickey', 'keyboard-interactive']);
    return null;
  }

  private session(session: Session, who: NonNullable<Who>, active: () => void) {
    let terminal: { rows: number; cols: number; term: string } | null = null;
    let resize: ((size: { rows: number; cols: number }) => void) | null = null;
    let started = false;
    session.on('pty', (accept, _reject, info) => {
      terminal = { rows: clamp(info.rows), cols: clamp(info.cols), term: /^[A-Za-z0-9._+-]{1,64}$/.test(info.term) ? info.term : 'xterm' };
      accept?.();
    });
    session.on('window-change', (accept, _reject, info) => {
      resize?.({ rows: clamp(info.rows), cols: clamp(info.cols) });
      accept?.();
    });
    session.on('env', (accept) => accept?.());
    const run = (channel: ServerChannel, command: string | null) => {
      active();
      if (who.kind === 'token')
        return this.execSession(channel, who.token, command, terminal, (r) => (resize = r), active).catch((err) =>
          this.failed(channel, err),
        );
      if (command === null)
        return tell(
          channel,
          1,
          `${who.principal.user.username}: this server gives no shell. Push with: git push ssh://git@HOST:PORT/ORG/PROJECT/APP.git`,
        );
      // A push's data and its deploy's output keep the connection alive (the idle limit is for silence).
      // Paused: a data listener alone would make the channel flow, and the client's commands, sent as soon
      // as it has the refs, would be lost before the push's reader listens (it resumes the channel).
      channel.on('data', active).pause();
      return this.git(channel, who.principal, command, active).catch((err) => this.failed(channel, err));
    };
    session.on('exec', (accept, reject, info) => {
      if (started) return reject?.();
      started = true;
      run(accept(), info.command);
    });
    session.on('shell', (accept, reject) => {
      if (started) return reject?.();
      started = true;
      run(accept(), null);
    });
    session.on('subsystem', (_accept, reject) => reject?.());
  }

  /** A token's exec session: the SSH channel bridged onto the exec core's process, its exit status passed back. */
  private async execSession(
    channel: ServerChannel,
    token: string,
    command: string | null,
    terminal: { rows: number; cols: number; term: string } | null,
    onResize: (resize: (size: { rows: number; cols: number }) => void) => void,
    active: () => void,
  ) {
    const attached = await this.deps.exec.attachWithSshToken(token, { command, terminal });
    const { process } = attached;
    onResize((size) => process.resize(size));
    channel.on('data', active);
    const forward = (from: NodeJS.ReadableStream & { pause(): void; resume(): void }, to: NodeJS.WritableStream) =>
      from.on('data', (chunk: Buffer) => {
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => from.resume());
        }
      });
    forward(process.stdout as never, channel);
    forward(process.stderr as never, channel.stderr);
    const stdin = process.stdin as NodeJS.WritableStream & { once(e: 'drain', f: () => void): void };
    channel.on('data', (chunk: Buffer) => {
      if (!stdin.write(chunk)) {
        channel.pause();
        stdin.once('drain', () => channel.resume());
      }
    });
    channel.on('end', () => stdin.end());
    channel.on('close', () => process.kill());
    const ended = (stream: NodeJS.ReadableStream) => new Promise<void>((resolve) => stream.once('end', resolve).once('close', resolve));
    const [status] = await Promise.all([process.exited, ended(process.stdout), ended(process.stderr)]);
    await attached.finish(status.exitCode);
    if (status.exitCode === null && status.signal) channel.exit(status.signal.replace(/^SIG/, ''), false, '');
    else channel.exit(status.exitCode ?? 255);
    channel.end();
  }

  /** `git-receive-pack` on an application's repository: the HTTP push's path, on this channel. */
  private async git(channel: ServerChannel, principal: Principal, command: string, active: () => void) {
    const match = GIT_COMMAND.exec(command.trim());
    if (!match)
      return tell(channel, 1, 'Only git-receive-pack on a repository runs here (git push ssh://git@HOST:PORT/ORG/PROJECT/APP.git)');
    if (match[1] === 'upload-pack') return tell(channel, 1, 'This remote takes pushes only (git push)');
    const path = match[2]!.replace(/\.git$/, '').replace(/^git\//, '');
    const parts = path.split('/');
    let applicationId: string;
    if (parts.length === 1 && UUID.test(parts[0]!)) applicationId = parts[0]!;
    else if (parts.length === 3) {
      try {
        applicationId = await this.deps.applicationBySlugs(principal.user.id, parts[0]!, parts[1]!, parts[2]!);
      } catch (err) {
        if (err instanceof AppError && err.kind === 'FORBIDDEN')
          return tell(channel, 1, `${principal.user.username} is not a member of the organization that owns ${path}`);
        if (err instanceof AppError && err.status < 500) return tell(channel, 1, `${path}: ${err.message}`);
        throw err;
      }
    } else return tell(channel, 1, `No such repository '${path}': push to /ORG/PROJECT/APP.git or /git/<application id>.git`);
    let ended = false;
    try {
      await this.deps.gitPush.receiveOverSsh(principal, applicationId, {
        input: channel,
        out: {
          write: (chunk) => {
            active();
            if (!channel.destroyed) channel.write(chunk);
          },
          end: () => {
            ended = true;
            if (channel.destroyed) return;
            channel.exit(0);
            channel.end();
          },
          closed: () => channel.destroyed,
        },
      });
      if (!ended) tell(channel, 0, '');
    } catch (err) {
      if (err instanceof PushRefused && !ended) return tell(channel, 1, err.message);
      throw err;
    }
  }

  private failed(channel: ServerChannel, err: unknown) {
    if (err instanceof AppError && err.status < 500) return tell(channel, 1, err.message);
    this.deps.logger.warn({ err }, 'ssh gateway channel failed');
    tell(channel, 1, 'the server failed; its log has the details');
  }
}

/** Ends a channel with a message on its standard error (the client prints it) and an exit status. */
function tell(channel: ServerChannel, code: number, message: string) {
  if (channel.destroyed) return;
  if (message) channel.stderr.write(`Slipway: ${message}\r\n`);
  channel.exit(code);
  channel.end();
}

/** Refuses a login and says why: OpenSSH prints a keyboard-interactive request's instructions, even with no prompt. */
function refuseWithReason(ctx: AuthContext, reason: string): null {
  if (ctx.method !== 'keyboard-interactive') {
    ctx.reject(['keyboard-interactive']);
    return null;
  }
  ctx.prompt([], 'Slipway', `Slipway: ${reason}`, () => ctx.reject());
  return null;
}

const clamp = (n: number) => Math.min(Math.max(Math.trunc(n) || 0, 1), 9999);

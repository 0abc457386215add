/**
 * The part of `ws` (8.x) that Slipway uses: the exec WebSocket on the server and in the CLI.
 * Declared here rather than adding @types/ws for a handful of members.
 */
declare module 'ws' {
  import type { EventEmitter } from 'node:events';
  import type { IncomingMessage } from 'node:http';
  import type { Duplex } from 'node:stream';

  type Data = Buffer | ArrayBuffer | Buffer[];

  class WebSocket extends EventEmitter {
    static readonly OPEN: 1;
    constructor(url: string, options?: { headers?: Record<string, string>; maxPayload?: number });
    /** With subprotocols (the Kubernetes exec channels) and TLS options from a kubeconfig. */
    constructor(url: string, protocols: string[], options?: ClientOptions);
    /** The subprotocol the server chose. */
    readonly protocol: string;
    readonly readyState: 0 | 1 | 2 | 3;
    readonly bufferedAmount: number;
    send(data: Buffer | string, options?: { binary?: boolean }, callback?: (err?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    pause(): void;
    resume(): void;
    on(event: 'message', listener: (data: Data, isBinary: boolean) => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: 'open', listener: () => void): this;
    on(event: 'unexpected-response', listener: (request: unknown, response: IncomingMessage) => void): this;
    once(event: 'open', listener: () => void): this;
    once(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    once(event: 'error', listener: (err: Error) => void): this;
    once(event: 'unexpected-response', listener: (request: unknown, response: IncomingMessage) => void): this;
  }

  interface ClientOptions {
    headers?: Record<string, string>;
    maxPayload?: number;
    handshakeTimeout?: number;
    ca?: Buffer | string;
    cert?: Buffer | string;
    key?: Buffer | string;
    rejectUnauthorized?: boolean;
  }

  class WebSocketServer extends EventEmitter {
    constructor(options: {
      noServer: true;
      maxPayload?: number;
      handleProtocols?: (protocols: Set<string>, request: IncomingMessage) => string | false;
    });
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, callback: (ws: WebSocket) => void): void;
    close(): void;
  }

  export { WebSocket, WebSocketServer, type ClientOptions };
  export default WebSocket;
}

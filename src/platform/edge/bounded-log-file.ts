import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';

/**
 * A log file that never grows past `maxBytes`: once full it becomes `<path>.1` (replacing the
 * previous one) and a new file starts, so a long-lived edge keeps at most twice that on disk.
 * Writes are synchronous (a pino destination): the edge logs warnings, and every request
 * only at `debug`.
 */
export class BoundedLogFile {
  private fd: number;
  private size: number;

  constructor(
    private readonly path: string,
    private readonly maxBytes: number,
  ) {
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  write(line: string): boolean {
    const bytes = Buffer.byteLength(line);
    if (this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    try {
      writeSync(this.fd, line);
      this.size += bytes;
    } catch {
      // A full disk must not stop the edge serving: the line is lost, the next one tries again.
    }
    return true;
  }

  private rotate() {
    try {
      renameSync(this.path, `${this.path}.1`);
      const fd = openSync(this.path, 'a', 0o600);
      closeSync(this.fd);
      this.fd = fd;
      this.size = 0;
    } catch {
      // Could not rotate (disk full, directory gone): keep the current file.
    }
  }
}

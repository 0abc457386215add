import type { Config } from '../../config.js';

/** One e-mail: every message Slipway sends has a text part and an HTML part. */
export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** What the SMTP server said: its reply code (250 when accepted) and the accepted message's id. */
export interface MailReceipt {
  code: number | null;
  messageId: string;
}

export interface Mailer {
  /** Sends one message; rejects when the server refused it or did not answer (the error names no credential). */
  send(message: MailMessage): Promise<MailReceipt>;
}

export type MailSettings = Pick<
  Config,
  'SMTP_URL' | 'SMTP_HOST' | 'SMTP_PORT' | 'SMTP_USER' | 'SMTP_PASSWORD' | 'SMTP_TLS' | 'SMTP_FROM' | 'WEBHOOK_TIMEOUT_MS'
>;

interface Server {
  host: string;
  port: number;
  user?: string;
  password?: string;
  implicitTls: boolean;
}

function serverOf(settings: MailSettings): Server | null {
  if (settings.SMTP_URL) {
    const url = new URL(settings.SMTP_URL);
    const implicitTls = url.protocol === 'smtps:' || settings.SMTP_TLS === 'implicit';
    return {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
      user: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
      implicitTls,
    };
  }
  if (!settings.SMTP_HOST) return null;
  return {
    host: settings.SMTP_HOST,
    port: settings.SMTP_PORT,
    user: settings.SMTP_USER,
    password: settings.SMTP_PASSWORD,
    implicitTls: settings.SMTP_TLS === 'implicit',
  };
}

/** Whether the operator configured an SMTP server (SMTP_URL or SMTP_HOST). */
export function mailConfigured(settings: Pick<Config, 'SMTP_URL' | 'SMTP_HOST'>): boolean {
  return Boolean(settings.SMTP_URL || settings.SMTP_HOST);
}

/**
 * The platform's mailer over the operator's SMTP server, or null when none is configured. One
 * connection per message (no pool to keep or close); the SMTP conversation is never logged, so
 * the password and the messages stay out of the logs.
 */
export function createMailer(settings: MailSettings): Mailer | null {
  const server = serverOf(settings);
  if (!server) return null;
  const timeout = settings.WEBHOOK_TIMEOUT_MS;
  // nodemailer loads with the first message, not at start: it would hold ~3 MiB of a control plane that sends none.
  const open = async () =>
    (await import('nodemailer')).createTransport({
      host: server.host,
      port: server.port,
      secure: server.implicitTls,
      requireTLS: !server.implicitTls && settings.SMTP_TLS === 'starttls',
      ignoreTLS: settings.SMTP_TLS === 'none',
      auth: server.user ? { user: server.user, pass: server.password ?? '' } : undefined,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
      logger: false,
      debug: false,
    });
  let transport: ReturnType<typeof open> | undefined;
  return {
    async send(message) {
      const mail = await (transport ??= open());
      const info = await mail.sendMail({
        from: settings.SMTP_FROM,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
      });
      const code = /^(\d{3})/.exec(info.response ?? '')?.[1];
      return { code: code ? Number(code) : null, messageId: info.messageId };
    },
  };
}

/** An SMTP error as a delivery log may show it: the server's answer or the transport's reason, no address or password. */
export function mailErrorText(err: unknown): string {
  const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
  if (e?.responseCode) return `the mail server answered ${e.responseCode}: ${String(e.response ?? '').slice(0, 300)}`;
  if (e?.code) return `mail transport failed (${e.code})`;
  return 'mail transport failed';
}

import type { LogDrainSource } from '../../platform/db/schema.js';

/** One log line with the fields every drain format carries. */
export interface DrainLine {
  at: Date;
  source: LogDrainSource;
  /** stdout/stderr for runtime lines; `log` for build and deploy logs. */
  stream: 'stdout' | 'stderr' | 'log';
  organization: string;
  project: string;
  app: string;
  environment: string | null;
  release: number | null;
  /** `web.1` for runtime lines; `build`, `release` or `deploy` otherwise. */
  instance: string;
  message: string;
}

/** RFC 5612's documentation enterprise number, naming Slipway's structured-data element. */
const SD_ID = 'slipway@32473';

/** PRINTUSASCII without spaces, as RFC 5424 wants its header fields (NILVALUE when empty). */
function headerField(text: string, max: number): string {
  const clean = text.replace(/[^\x21-\x7e]/g, '_').slice(0, max);
  return clean || '-';
}

/** A structured-data parameter value: `"`, `\` and `]` escaped (RFC 5424 section 6.3.3). */
const sdValue = (text: string) => text.replace(/["\\\]]/g, (c) => `\\${c}`);

/**
 * One RFC 5424 message with octet-counting framing (RFC 6587 section 3.4.1, RFC 5425 over TLS):
 * `LEN SP <PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG`. Facility user (1); stderr is err (3),
 * everything else info (6).
 */
export function syslogFrame(line: DrainLine): Buffer {
  const pri = 8 + (line.stream === 'stderr' ? 3 : 6);
  const params: Array<[string, string | null]> = [
    ['organization', line.organization],
    ['project', line.project],
    ['app', line.app],
    ['environment', line.environment],
    ['release', line.release === null ? null : String(line.release)],
    ['instance', line.instance],
    ['source', line.source],
    ['stream', line.stream],
  ];
  const sd = `[${SD_ID}${params
    .filter(([, v]) => v !== null)
    .map(([k, v]) => ` ${k}="${sdValue(v!)}"`)
    .join('')}]`;
  const header = [
    `<${pri}>1`,
    line.at.toISOString(),
    headerField(`${line.organization}.${line.project}`, 255),
    headerField(line.app, 48),
    headerField(line.instance, 128),
    headerField(line.source, 32),
  ].join(' ');
  const message = Buffer.from(`${header} ${sd} ${line.message}`, 'utf8');
  return Buffer.concat([Buffer.from(`${message.length} `), message]);
}

/** The HTTPS drain's body: one JSON object per line (`application/x-ndjson`). */
export function jsonLines(lines: DrainLine[]): string {
  return lines
    .map((l) =>
      JSON.stringify({
        timestamp: l.at.toISOString(),
        message: l.message,
        source: l.source,
        stream: l.stream,
        organization: l.organization,
        project: l.project,
        app: l.app,
        environment: l.environment,
        release: l.release,
        instance: l.instance,
      }),
    )
    .join('\n')
    .concat('\n');
}

const attr = (key: string, value: string | number | null) =>
  value === null ? null : { key, value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value } };

/**
 * An OTLP/HTTP logs request in its JSON encoding (`ExportLogsServiceRequest`): one resource per
 * application environment and release (service.name, deployment.environment, service.version),
 * each line a log record with its severity and the instance, source and stream as attributes.
 */
export function otlpLogs(lines: DrainLine[]) {
  const byResource = new Map<string, DrainLine[]>();
  for (const l of lines) {
    const key = JSON.stringify([l.organization, l.project, l.app, l.environment, l.release]);
    const group = byResource.get(key);
    if (group) group.push(l);
    else byResource.set(key, [l]);
  }
  return {
    resourceLogs: [...byResource.values()].map((group) => {
      const first = group[0]!;
      return {
        resource: {
          attributes: [
            attr('service.name', first.app),
            attr('service.namespace', `${first.organization}/${first.project}`),
            attr('deployment.environment', first.environment),
            attr('service.version', first.release === null ? null : `v${first.release}`),
          ].filter(Boolean),
        },
        scopeLogs: [
          {
            scope: { name: 'slipway' },
            logRecords: group.map((l) => {
              const nanos = `${BigInt(l.at.getTime()) * 1_000_000n}`;
              return {
                timeUnixNano: nanos,
                observedTimeUnixNano: nanos,
                severityNumber: l.stream === 'stderr' ? 17 : 9,
                severityText: l.stream === 'stderr' ? 'ERROR' : 'INFO',
                body: { stringValue: l.message },
                attributes: [attr('slipway.instance', l.instance), attr('slipway.source', l.source), attr('log.iostream', l.stream)].filter(
                  Boolean,
                ),
              };
            }),
          },
        ],
      };
    }),
  };
}

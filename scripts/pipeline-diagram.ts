/**
 * Draws the pipeline of src/pipeline/stages.ts into docs/architecture.md (between the
 * `pipeline-stages` markers): the stages in order, then each record's state machine with who
 * moves it and what settles it on a crash. The stage file is the source; the page follows it.
 *
 *   npx tsx scripts/pipeline-diagram.ts            rewrite the block
 *   npx tsx scripts/pipeline-diagram.ts --check    exit 1 when it is not current (also a test)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LIFECYCLES, STAGES, CHAIN_JOB, RUN_JOB, type Lifecycle } from '../src/pipeline/stages.js';

export const ARCHITECTURE_FILE = resolve(import.meta.dirname, '../docs/architecture.md');
const BEGIN = '<!-- pipeline-stages:begin (generated from src/pipeline/stages.ts by scripts/pipeline-diagram.ts) -->';
const END = '<!-- pipeline-stages:end -->';

/** The function a transition is written in, for a diagram's edge label. */
const fn = (writtenIn: string) => writtenIn.split('#')[1] ?? writtenIn;
const cell = (text: string) => text.replace(/\|/g, '\\|');

function stageFlow(): string {
  const lines = [
    '```mermaid',
    'flowchart LR',
    `  request(["request: deploy, GitHub push, preview, environment deploy"]) -->|"${CHAIN_JOB} job"| ${STAGES[0].stage}`,
  ];
  STAGES.forEach((s, i) => {
    lines.push(`  ${s.stage}["${s.stage}<br/>job: ${s.job}<br/>${s.code}"] --> ${s.stage}_out[("${s.makes}")]`);
    const next = STAGES[i + 1];
    if (next) lines.push(`  ${s.stage}_out --> ${next.stage}`);
  });
  lines.push(`  deploy_out -.->|"${RUN_JOB} job"| run["one-off run<br/>run/"]`, '```');
  return lines.join('\n');
}

function stateDiagram(l: Lifecycle<string, string>): string {
  // One edge per (from, to, label): the table below lists each cause.
  const edges = new Set<string>();
  for (const t of l.transitions) {
    const label = `${fn(t.writtenIn)}${t.recovery ? ' (crash recovery)' : ''}${t.columnDefault ? ' (column default)' : ''}`;
    for (const from of t.from.length ? t.from : ['[*]']) edges.add(`  ${from} --> ${t.to}: ${label}`);
  }
  return ['```mermaid', 'stateDiagram-v2', ...edges, '```'].join('\n');
}

function transitionTable(l: Lifecycle<string, string>): string {
  const rows = l.transitions.map(
    (t) =>
      `| ${t.from.length ? t.from.join(', ') : '(created)'} | ${t.to} | ${cell(t.by)}${t.recovery ? ' **(recovery)**' : ''} | \`${t.writtenIn}\` |`,
  );
  const crash = l.inProgress.map((s) => `- **${s}** on a crash: ${l.onCrash[s]}`);
  return ['| from | to | who moves it | written in (src/pipeline/) |', '| --- | --- | --- | --- |', ...rows, '', ...crash].join('\n');
}

export function pipelineDiagram(): string {
  const parts = [BEGIN, '', stageFlow(), ''];
  for (const l of LIFECYCLES) {
    const where = l.table ? `table \`${l.table}\`` : 'derived from its records, not stored';
    parts.push(`#### ${l.record} (${where})`, '', stateDiagram(l), '', transitionTable(l), '');
  }
  parts.push(END);
  return parts.join('\n');
}

/** The page with its generated block replaced by `block`. */
export function withDiagram(page: string, block: string): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${ARCHITECTURE_FILE} has no ${BEGIN} … ${END} block`);
  return page.slice(0, start) + block + page.slice(end + END.length);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const page = readFileSync(ARCHITECTURE_FILE, 'utf8');
  const current = withDiagram(page, pipelineDiagram());
  if (process.argv.includes('--check')) {
    if (current !== page) {
      console.error('docs/architecture.md does not draw src/pipeline/stages.ts: run `npx tsx scripts/pipeline-diagram.ts`');
      process.exit(1);
    }
  } else {
    writeFileSync(ARCHITECTURE_FILE, current);
  }
}

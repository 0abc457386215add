import type { Command } from 'commander';
import { Context } from '../context.js';
import { CliError, usage } from '../errors.js';
import { when } from '../output.js';
import { readDotenvFile, scopeOf, SCOPES } from '../config-scopes.js';
import { readStdin } from '../stdin.js';

interface ScopeOptions {
  scope: string;
  team?: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function configCommands(program: Command) {
  const config = program.command('config').description('Configuration variables, at any of the five layers (--scope)');
  const withScope = (c: Command) =>
    c
      .option('--scope <scope>', `layer: ${SCOPES.join(' | ')} (the lower one wins)`, 'app')
      .option('--team <team>', 'the team, with --scope team');

  withScope(config.command('list').alias('ls').description('Variables of a layer (secrets shown as **secret**)')).action(
    async (opts: ScopeOptions, command: Command) => {
      const ctx = Context.of(command);
      const scope = await scopeOf(ctx, opts.scope, opts.team);
      const list = await scope.list();
      ctx.out.table(
        list,
        [
          { header: 'NAME', value: (v) => v.name },
          { header: 'VALUE', value: (v) => v.value },
          { header: 'SECRET', value: (v) => (v.secret ? 'yes' : '') },
          { header: 'BUILDTIME', value: (v) => (v.buildtime ? 'yes' : '') },
          { header: 'UPDATED', value: (v) => when(v.updated) },
        ],
        `no variables in the ${scope.label}`,
      );
    },
  );

  withScope(
    config
      .command('set')
      .description('Set variables: KEY=value ...')
      .argument('<KEY=value...>')
      .option('--secret', 'store as secret: sealed, never shown again')
      .option('--buildtime', 'also available while building')
      .addHelpText(
        'after',
        '\nExamples:\n  slipway config set NODE_ENV=production LOG_LEVEL=info\n  slipway config set DATABASE_URL=postgres://... --secret\n  slipway config set NPM_TOKEN=... --secret --buildtime --scope workspace',
      ),
  ).action(async (pairs: string[], opts: ScopeOptions & { secret?: boolean; buildtime?: boolean }, command: Command) => {
    const ctx = Context.of(command);
    const assignments = pairs.map((pair) => {
      const at = pair.indexOf('=');
      const name = at > 0 ? pair.slice(0, at) : '';
      if (!NAME.test(name))
        throw usage(`'${at > 0 ? name : pair.split('=')[0]}' is not KEY=value with a variable name (letters, digits, _)`);
      return { name, value: pair.slice(at + 1) };
    });
    const scope = await scopeOf(ctx, opts.scope, opts.team);
    const existing = new Map((await scope.list()).map((v) => [v.name.toLowerCase(), v]));
    const flags = { ...(opts.secret ? { secret: true } : {}), ...(opts.buildtime ? { buildtime: true } : {}) };
    const results: Array<Awaited<ReturnType<typeof scope.create>> & { result: string }> = [];
    for (const { name, value } of assignments) {
      const current = existing.get(name.toLowerCase());
      const saved = current ? await scope.update(current.id, { value, ...flags }) : await scope.create({ name, value, ...flags });
      results.push({ ...saved, result: current ? 'updated' : 'created' });
    }
    ctx.out.result(results, () =>
      results.map((r) => `${r.result === 'created' ? 'Set' : 'Updated'} ${r.name}${r.secret ? ' (secret)' : ''} in the ${scope.label}`),
    );
  });

  withScope(config.command('unset').alias('delete').description('Remove variables').argument('<KEY...>')).action(
    async (names: string[], opts: ScopeOptions, command: Command) => {
      const ctx = Context.of(command);
      const scope = await scopeOf(ctx, opts.scope, opts.team);
      const existing = new Map((await scope.list()).map((v) => [v.name.toLowerCase(), v]));
      const missing = names.filter((n) => !existing.has(n.toLowerCase()));
      if (missing.length > 0) throw new CliError(`Not set in the ${scope.label}: ${missing.join(', ')}`, 3);
      for (const name of names) await scope.remove(existing.get(name.toLowerCase())!.id);
      ctx.out.result({ deleted: names }, () => `Removed ${names.join(', ')} from the ${scope.label}`);
    },
  );

  withScope(
    config
      .command('import')
      .description('Set variables from a dotenv file (`-` for standard input)')
      .argument('<file>')
      .option('--secret', 'store every variable as secret')
      .option('--buildtime', 'also available while building')
      .addHelpText(
        'after',
        '\nNew names are created, plain ones updated; existing secrets are left as they are.\nValues are never printed, only names.',
      ),
  ).action(async (file: string, opts: ScopeOptions & { secret?: boolean; buildtime?: boolean }, command: Command) => {
    const ctx = Context.of(command);
    const text = await readDotenvFile(file, readStdin);
    const scope = await scopeOf(ctx, opts.scope, opts.team);
    const results = await scope.importDotenv(text, {
      ...(opts.secret ? { secret: true } : {}),
      ...(opts.buildtime ? { buildtime: true } : {}),
    });
    ctx.out.table(
      results,
      [
        { header: 'NAME', value: (r) => r.name },
        { header: 'RESULT', value: (r) => ctx.out.status(r.result === 'error' ? 'error' : r.result) },
        { header: 'NOTE', value: (r) => r.message },
      ],
      'no variables in the file',
    );
    const failed = results.filter((r) => r.result === 'error');
    if (failed.length > 0)
      throw new CliError(`${failed.length} of ${results.length} variables were not imported: ${failed.map((f) => f.name).join(', ')}`);
  });
}

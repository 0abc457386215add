import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** A status value the code sets: in which file and function, and which state. */
export interface StatusWrite {
  /** `<path under src/pipeline>#<function>` or `#<Class.method>`, as the stage table names it. */
  at: string;
  state: string;
  line: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The string literals an expression can evaluate to (`'a'`, `'a' as const`, `x ? 'a' : 'b'`); null if anything else. */
function literals(node: ts.Expression): string[] | null {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text];
  if (ts.isAsExpression(node) || ts.isParenthesizedExpression(node) || ts.isSatisfiesExpression(node)) return literals(node.expression);
  if (ts.isConditionalExpression(node)) {
    const a = literals(node.whenTrue);
    const b = literals(node.whenFalse);
    return a && b ? [...a, ...b] : null;
  }
  return null;
}

/** The nearest named function around a node: `name`, or `Class.method` for a method or a constructor. */
function enclosingName(node: ts.Node): string | null {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if ((ts.isMethodDeclaration(n) || ts.isGetAccessor(n)) && ts.isClassLike(n.parent) && n.name && ts.isIdentifier(n.name))
      return `${n.parent.name?.text ?? '(class)'}.${n.name.text}`;
    if (ts.isConstructorDeclaration(n) && ts.isClassLike(n.parent)) return `${n.parent.name?.text ?? '(class)'}.constructor`;
    if (ts.isFunctionDeclaration(n) && n.name) return n.name.text;
    if (
      ts.isVariableDeclaration(n) &&
      ts.isIdentifier(n.name) &&
      n.initializer &&
      (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))
    )
      return n.name.text;
  }
  return null;
}

/**
 * Every status the code under `root` writes: an object property `status: <literal>` (a row
 * inserted or updated, or a state returned), and a local `const status = <literal or choice of
 * literals>` (passed on as `{ status }`). Reading a status (`x.status === 'y'`) is not a write.
 */
export function statusWrites(root: string): StatusWrite[] {
  const writes: StatusWrite[] = [];
  for (const file of sourceFiles(root)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const path = relative(root, file);
    const record = (node: ts.Node, values: string[]) => {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      for (const state of values) writes.push({ at: `${path}#${enclosingName(node) ?? '(top level)'}`, state, line });
    };
    const visit = (node: ts.Node) => {
      if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === 'status') {
        const values = literals(node.initializer);
        if (values) record(node, values);
      }
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === 'status' && node.initializer) {
        const values = literals(node.initializer);
        if (values) record(node, values);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return writes;
}

/** Kysely writes (`insertInto`, `updateTable`, `deleteFrom`) of one of `tables` in the code under `root`: `<path>:<line> <table>`. */
export function tableWrites(root: string, tables: ReadonlySet<string>): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(root)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        ['insertInto', 'updateTable', 'deleteFrom'].includes(node.expression.name.text)
      ) {
        const [table] = node.arguments;
        const name = table && ts.isStringLiteral(table) ? table.text.split(' ')[0]! : null;
        if (name && tables.has(name))
          found.push(`${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${name}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The naming rule of the house: no name of one or two characters in an exported signature (its
 * parameters, and the members of an exported interface or class), nor among the parameters and
 * variables of a function over 20 lines. Allowed, explicitly: `i` and `j` declared by a `for`
 * loop's initializer, `_` for a value deliberately unused, and the two-letter English words of
 * READABLE_WORDS (`id`, `db`, `at`, `to`…), which read as what they are.
 *
 * The names there were when the rule came are listed, counted by file, in
 * readableNames.known.json: a ratchet. A new short name fails; a listed one renamed fails too
 * until its count in the list is lowered (or its line removed), so the list only shrinks.
 */
const SRC = join(import.meta.dirname, '../../src');
const LONG_FUNCTION_LINES = 20;
const LOOP_INDEXES = new Set(['i', 'j']);
const READABLE_WORDS = new Set(['id', 'db', 'at', 'by', 'to', 'of', 'ok', 'on', 'up', 'in', 'is', 'no']);
const KNOWN = join(import.meta.dirname, 'readableNames.known.json');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const isShort = (name: string) => name.length <= 2 && name !== '_' && !READABLE_WORDS.has(name);

function isExported(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword);
}

/** Every identifier a binding (a parameter, a variable, a destructured name) declares. */
function boundNames(binding: ts.BindingName): ts.Identifier[] {
  if (ts.isIdentifier(binding)) return [binding];
  return binding.elements.flatMap((element) => (ts.isOmittedExpression(element) ? [] : boundNames(element.name)));
}

function isLoopIndex(identifier: ts.Identifier): boolean {
  const declaration = identifier.parent;
  const list = ts.isVariableDeclaration(declaration) ? declaration.parent : undefined;
  return LOOP_INDEXES.has(identifier.text) && list !== undefined && ts.isVariableDeclarationList(list) && ts.isForStatement(list.parent);
}

interface Finding {
  /** the file and the name: what the known list counts */
  key: string;
  /** file, line, name and the rule's reason, for the message */
  where: string;
}

function findShortNames(path: string): Finding[] {
  const text = readFileSync(path, 'utf8');
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const findings: Finding[] = [];
  const report = (identifier: ts.Identifier, why: string) => {
    const { line } = source.getLineAndCharacterOfPosition(identifier.getStart());
    findings.push({
      key: `${relative(SRC, path)} ${identifier.text}`,
      where: `${relative(SRC, path)}:${line + 1} \`${identifier.text}\` (${why})`,
    });
  };
  const linesOf = (node: ts.Node) =>
    source.getLineAndCharacterOfPosition(node.getEnd()).line - source.getLineAndCharacterOfPosition(node.getStart()).line + 1;

  const checkParameters = (fn: ts.SignatureDeclaration, why: string) => {
    for (const parameter of fn.parameters) for (const name of boundNames(parameter.name)) if (isShort(name.text)) report(name, why);
  };

  const checkLongFunction = (fn: ts.FunctionLikeDeclaration) => {
    checkParameters(fn, 'a parameter of a function over 20 lines');
    const visitBody = (node: ts.Node): void => {
      if (ts.isVariableDeclaration(node) || ts.isCatchClause(node)) {
        const binding = ts.isCatchClause(node) ? node.variableDeclaration?.name : node.name;
        for (const name of binding ? boundNames(binding) : [])
          if (isShort(name.text) && !isLoopIndex(name)) report(name, 'in a function over 20 lines');
      }
      // a nested function is judged on its own length
      if (ts.isFunctionLike(node) && node !== fn) return;
      ts.forEachChild(node, visitBody);
    };
    if (fn.body) ts.forEachChild(fn.body, visitBody);
  };

  const visit = (node: ts.Node, inExported: boolean): void => {
    const exported = inExported || isExported(node) || (ts.isVariableDeclaration(node) && isExported(node.parent.parent));
    if (ts.isFunctionLike(node)) {
      const isLong = 'body' in node && node.body !== undefined && linesOf(node) > LONG_FUNCTION_LINES;
      if (isLong) checkLongFunction(node as ts.FunctionLikeDeclaration);
      else if (exported && !ts.isArrowFunction(node.parent) && !ts.isCallExpression(node.parent))
        checkParameters(node, 'an exported signature');
    }
    if (
      exported &&
      (ts.isPropertySignature(node) || ts.isPropertyDeclaration(node) || ts.isMethodSignature(node)) &&
      ts.isIdentifier(node.name) &&
      isShort(node.name.text)
    )
      report(node.name, 'a member of an exported type');
    // within an exported declaration only its own signatures count, not what its bodies call
    const childExported =
      exported &&
      (ts.isInterfaceDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isTypeLiteralNode(node) ||
        ts.isTypeAliasDeclaration(node) ||
        ts.isVariableDeclaration(node) ||
        ts.isVariableStatement(node) ||
        ts.isVariableDeclarationList(node) ||
        ts.isObjectLiteralExpression(node) ||
        ts.isPropertyAssignment(node) ||
        ts.isFunctionTypeNode(node) ||
        ts.isMethodSignature(node) ||
        ts.isPropertySignature(node) ||
        ts.isUnionTypeNode(node));
    ts.forEachChild(node, (child) => visit(child, childExported));
  };
  visit(source, false);
  return findings;
}

describe('readable names', () => {
  it('no one- or two-letter name in an exported signature or a function over 20 lines of src/', () => {
    const findings = sourceFiles(SRC).flatMap(findShortNames);
    const known = JSON.parse(readFileSync(KNOWN, 'utf8')) as Record<string, number>;
    const counts = new Map<string, number>();
    for (const { key } of findings) counts.set(key, (counts.get(key) ?? 0) + 1);
    const fresh = findings.filter(({ key }) => (counts.get(key) ?? 0) > (known[key] ?? 0)).map(({ where }) => where);
    expect(fresh, 'short names beyond readableNames.known.json: rename them').toEqual([]);
    const renamed = Object.entries(known)
      .filter(([key, count]) => (counts.get(key) ?? 0) < count)
      .map(([key, count]) => `${key}: ${counts.get(key) ?? 0} left of ${count}`);
    expect(renamed, 'names renamed: lower their counts in readableNames.known.json').toEqual([]);
  });
});

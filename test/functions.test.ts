/**
 * Short functions: no function, method, constructor, accessor or arrow function in src/ spans more
 * than MAX_LINES lines, from its first line to its last.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_LINES = 80;

/** Every .ts file under `dir`, recursively. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** The functions of `text` longer than `max` lines, as "lines file:line name". */
function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) {
        const name =
          node.name !== undefined ? node.name.getText(source) : ts.isConstructorDeclaration(node) ? 'constructor' : '<anonymous>';
        found.push(`${lines} ${file}:${first + 1} ${name}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length', () => {
  it(`finds no function in src/ over ${MAX_LINES} lines`, () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(0);
    const long = files.flatMap((f) => longFunctions(relative(ROOT, f), readFileSync(f, 'utf8'), MAX_LINES));
    expect(long).toEqual([]);
  });

  it('catches a long function, method, constructor and arrow function, and passes a short one', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `function long() {\n${body(4)}\n}`,
      `function short() {\n${body(2)}\n}`,
      `class C {\n  constructor() {\n${body(4)}\n  }\n  method() {\n${body(4)}\n  }\n}`,
      `const arrow = () => {\n${body(4)}\n};`,
    ].join('\n');
    expect(longFunctions('x.ts', text, 5)).toEqual(['6 x.ts:1 long', '6 x.ts:12 constructor', '6 x.ts:18 method', '6 x.ts:25 <anonymous>']);
  });
});

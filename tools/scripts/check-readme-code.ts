// `npm run check:docs`: type-checks every ```ts block of every README.md, so a
// README example cannot drift from the API it shows.
//
// Each block becomes its own module (`tmp/readme-code/<readme>-<n>.ts`, inside
// the repository so that `@regulon/*` resolves through the workspace links in
// node_modules and their `exports` maps, exactly as a reader's import would),
// compiled with tsconfig.base.json's settings. Errors point at the README line.
//
// A block that cannot compile on purpose (a fragment continuing the previous
// block, say) is preceded by a visible marker with its reason:
//   <!-- not-checked: continues the example above -->
// Prefer making the block complete: the imports a reader needs are part of
// the documentation.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import ts from 'typescript';

export interface CodeBlock {
  /** 1-based count of ts blocks in its README, checked or not. */
  index: number;
  /** README line (1-based) of the block's first code line. */
  firstLine: number;
  /** Columns of fence indentation removed from each line (list items). */
  indent: number;
  code: string;
  /** Set when the block carries a `not-checked` marker. */
  notChecked?: string;
}

export interface Extracted {
  blocks: CodeBlock[];
  /** Malformed markers and unclosed fences, by README line. */
  problems: Array<{ line: number; message: string }>;
}

const CHECKED_LANGUAGES = new Set(['ts', 'typescript']);
const OPEN = /^(\s*)(`{3,}|~{3,})(.*)$/;
const MARKER = /^\s*<!--\s*not-checked\b(?:\s*:(.*?))?\s*-->\s*$/;
const MISPLACED = 'a not-checked marker must come right before a ts code block';

/** Splits a README into its fenced code blocks tagged ts/typescript (CommonMark fence rules). */
export function extractBlocks(markdown: string): Extracted {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  const problems: Extracted['problems'] = [];
  let marker: { line: number; reason: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const markerMatch = MARKER.exec(line);
    if (markerMatch) {
      const reason = markerMatch[1]?.trim() ?? '';
      if (reason === '') {
        problems.push({
          line: i + 1,
          message: 'a not-checked marker needs a reason: <!-- not-checked: why -->',
        });
      }
      marker = { line: i + 1, reason };
      continue;
    }
    const open = OPEN.exec(line);
    // Backtick fences may not carry backticks in their info string (CommonMark).
    if (!open || (open[2]!.startsWith('`') && open[3]!.includes('`'))) {
      if (marker && line.trim() !== '') {
        problems.push({ line: marker.line, message: MISPLACED });
        marker = undefined;
      }
      continue;
    }
    const indent = open[1]!.length;
    const fence = open[2]!;
    const language = open[3]!.trim().split(/\s+/)[0]!.toLowerCase();
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    if (end === lines.length) problems.push({ line: i + 1, message: 'code fence is never closed' });
    const code = lines
      .slice(i + 1, end)
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join('\n');
    if (CHECKED_LANGUAGES.has(language)) {
      blocks.push({
        index: blocks.length + 1,
        firstLine: i + 2,
        indent,
        code,
        ...(marker ? { notChecked: marker.reason } : {}),
      });
    } else if (marker) {
      problems.push({ line: marker.line, message: MISPLACED });
    }
    marker = undefined;
    i = end;
  }
  if (marker) problems.push({ line: marker.line, message: MISPLACED });
  return { blocks, problems };
}

// Generated, vendored and cached trees hold READMEs that are not ours.
const SKIP_DIRS = new Set(['node_modules', '.nx', '.git', '.cluster', 'dist', 'coverage', 'tmp']);

/** Every README.md under root, sorted, outside generated and dependency folders. */
export function findReadmes(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) walk(join(dir, entry.name));
      } else if (entry.isFile() && entry.name.toLowerCase() === 'readme.md') {
        found.push(join(dir, entry.name));
      }
    }
  };
  walk(root);
  return found.sort();
}

export interface CheckOptions {
  /** READMEs are named relative to this folder in reports and in outDir. */
  root: string;
  readmes: string[];
  /** Where the blocks are written; must sit inside the repository for `@regulon/*` to resolve. */
  outDir: string;
  /** The compiler settings; the repository's tsconfig.base.json. */
  tsconfig: string;
}

export interface CheckResult {
  /** `README.md:LINE: message`, in README order. */
  errors: string[];
  checked: number;
  notChecked: Array<{ where: string; reason: string }>;
}

/** Compiles every ts block of the READMEs as one program and maps errors back to README lines. */
export function checkReadmeCode(options: CheckOptions): CheckResult {
  const errors: string[] = [];
  const notChecked: CheckResult['notChecked'] = [];
  const sources = new Map<string, { name: string; block: CodeBlock }>();
  rmSync(options.outDir, { recursive: true, force: true });
  for (const readme of options.readmes) {
    const name = relative(options.root, readme);
    if (name.startsWith('..') || isAbsolute(name)) throw new Error(`${readme} is outside ${options.root}`);
    const { blocks, problems } = extractBlocks(readFileSync(readme, 'utf8'));
    for (const p of problems) errors.push(`${name}:${p.line}: ${p.message}`);
    for (const block of blocks) {
      if (block.notChecked !== undefined) {
        notChecked.push({ where: `${name}:${block.firstLine - 1}`, reason: block.notChecked });
        continue;
      }
      const file = join(options.outDir, `${name}-${block.index}.ts`);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, block.code + '\n');
      sources.set(ts.sys.resolvePath(file), { name, block });
    }
  }
  if (sources.size === 0) return { errors, checked: 0, notChecked };

  const compilerOptions = loadCompilerOptions(options.tsconfig);
  const host = ts.createCompilerHost(compilerOptions);
  const program = ts.createProgram([...sources.keys()], compilerOptions, host);
  const located: Array<{ name: string; line: number; text: string }> = [];
  for (const d of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
    errors.push(`${options.tsconfig}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  }
  for (const [file, { name, block }] of sources) {
    const sourceFile = program.getSourceFile(file);
    if (!sourceFile) throw new Error(`the compiler did not load ${file}`);
    for (const d of [
      ...program.getSyntacticDiagnostics(sourceFile),
      ...program.getSemanticDiagnostics(sourceFile),
    ]) {
      const { line, character } = sourceFile.getLineAndCharacterOfPosition(d.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n  ');
      located.push({
        name,
        line: block.firstLine + line,
        text: `${message} (TS${d.code}, column ${character + 1 + block.indent})`,
      });
    }
  }
  located.sort((a, b) => a.name.localeCompare(b.name) || a.line - b.line);
  errors.push(...located.map((e) => `${e.name}:${e.line}: ${e.text}`));
  return { errors, checked: sources.size, notChecked };
}

function loadCompilerOptions(tsconfig: string): ts.CompilerOptions {
  const read = ts.readConfigFile(tsconfig, (p) => ts.sys.readFile(p));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfig), undefined, tsconfig);
  if (parsed.errors.length > 0) {
    throw new Error(
      parsed.errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, '\n')).join('\n'),
    );
  }
  return {
    ...parsed.options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    // A block with no import or export is still its own module: two examples
    // may both declare `client` without clashing.
    moduleDetection: ts.ModuleDetectionKind.Force,
    // `types: ["node"]` resolves from the config's folder even when outDir lies elsewhere.
    typeRoots: [join(dirname(tsconfig), 'node_modules', '@types')],
  };
}

if (import.meta.main) {
  const root = join(import.meta.dirname, '..', '..');
  const result = checkReadmeCode({
    root,
    readmes: findReadmes(root),
    outDir: join(root, 'tmp', 'readme-code'),
    tsconfig: join(root, 'tsconfig.base.json'),
  });
  for (const { where, reason } of result.notChecked) console.log(`${where}: not checked: ${reason}`);
  for (const error of result.errors) console.error(error);
  console.log(
    `readme code: ${result.checked} blocks checked, ${result.notChecked.length} marked not-checked, ${result.errors.length} errors`,
  );
  process.exitCode = result.errors.length > 0 ? 1 : 0;
}

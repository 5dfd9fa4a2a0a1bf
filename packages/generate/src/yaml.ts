import { stringify } from 'yaml';

/**
 * One YAML document as every generated file writes it: no line folding (a
 * long value moves with the library's default width otherwise), two-space
 * indents with indented sequences, single quotes where quoting is needed.
 */
export function yamlDocument(value: unknown): string {
  return stringify(value, { lineWidth: 0, indent: 2, indentSeq: true, singleQuote: true });
}

/** Several documents, each after a `---` line. */
export function yamlDocuments(values: readonly unknown[]): string {
  return values.map((v) => `---\n${yamlDocument(v)}`).join('');
}

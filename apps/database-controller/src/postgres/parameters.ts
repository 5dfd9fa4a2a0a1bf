import type { ParameterNaming } from '../engine.ts';

/**
 * postgres setting names (guc-file.l): an identifier, or two joined by one
 * dot for an extension's setting (`auto_explain.log_min_duration`). The lexer
 * also takes bytes >= 0x80; no real setting has them, so ASCII only. Names are
 * compared ignoring case.
 */
export const gucNaming: ParameterNaming = {
  namePattern: '^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)?$',
  nameRuleText:
    'letters, digits and underscores, not starting with a digit, with at most one dot (e.g. shared_buffers, auto_explain.log_min_duration)',
  canonical: (lower) => lower,
  celMatches: (k, names) => `${k}.lowerAscii().matches('^(${names.join('|')})$')`,
  comparedText: 'compared ignoring case',
};

import type { ParameterNaming } from '../engine.ts';

/**
 * mysqld strips these option prefixes (followed by `-` or `_`) as often as
 * they repeat until a name matches: `loose-skip-grant-tables` is
 * `skip-grant-tables`, and `loose_port` is `port`.
 */
const MYSQL_OPTION_PREFIXES = ['loose', 'skip', 'enable', 'disable', 'maximum'] as const;
const MYSQL_PREFIX_RE = new RegExp(`^(${MYSQL_OPTION_PREFIXES.join('|')})-`);

/**
 * mysql setting names (my_getopt; mariadbd reads my.cnf with the same
 * parser): letters, digits, `-` and `_` (the same to mysqld), and one dot for
 * component and key cache settings (`validate_password.length`). Compared with
 * `-` and `_` the same and option prefixes stripped; mysqld compares
 * case-sensitively, lowering only makes the reserved check stricter.
 */
export const myGetoptNaming: ParameterNaming = {
  namePattern: '^[A-Za-z][A-Za-z0-9_-]*([.][A-Za-z][A-Za-z0-9_-]*)?$',
  nameRuleText:
    "letters, digits, '-' and '_', starting with a letter, with at most one dot (e.g. max_connections, innodb-buffer-pool-size)",
  canonical(lower) {
    let n = lower.replaceAll('_', '-');
    for (let m = MYSQL_PREFIX_RE.exec(n); m; m = MYSQL_PREFIX_RE.exec(n)) n = n.slice(m[0].length);
    return n;
  },
  // Any run of option prefixes may precede a name, as mysqld strips them.
  celMatches(k, names) {
    const prefixes = `((${MYSQL_OPTION_PREFIXES.join('|')})-)*`;
    return `${k}.lowerAscii().replace('_', '-').matches('^${prefixes}(${names.join('|')})$')`;
  },
  comparedText: `compared ignoring case, with '-' and '_' the same and the prefixes ${MYSQL_OPTION_PREFIXES.map((p) => `${p}-`).join(', ')} ignored`,
};

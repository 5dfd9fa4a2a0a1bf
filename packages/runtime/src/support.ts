// Small pieces shared by leader election, events, conditions and finalizers.
// Private to the package: nothing here is part of the public API. Clock, sleep and
// Logger live in @regulon/util.

/**
 * metav1.MicroTime as the API server writes it: RFC 3339 with exactly six
 * fractional digits. JavaScript only has milliseconds, so the last three
 * digits are always zero.
 */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** metav1.Time: RFC 3339 with second precision, which is all the API keeps. */
export function metaTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const encoder = new TextEncoder();

/**
 * Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character,
 * because API length limits on free text (Event.note, Condition.message) are
 * byte counts, and a cut in the middle of a code point would make the rest
 * invalid UTF-8.
 */
export function truncateUtf8(text: string, maxBytes: number, suffix = '...'): string {
  if (encoder.encode(text).length <= maxBytes) return text;
  const budget = maxBytes - encoder.encode(suffix).length;
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = encoder.encode(ch).length;
    if (used + size > budget) break;
    out += ch;
    used += size;
  }
  return out + suffix;
}

// apimachinery's IsQualifiedName: an optional DNS-subdomain prefix, then a
// name of at most 63 characters.
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isQualifiedName(value: string): boolean {
  const parts = value.split('/');
  if (parts.length > 2) return false;
  const name = parts.length === 2 ? parts[1] : parts[0];
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return false;
  }
  return name !== undefined && name.length > 0 && name.length <= 63 && QUALIFIED_NAME_PART.test(name);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const GRAMMAR = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([KMGTPE]i)|([numkMGTPE]?)|[eE]([+-]?[0-9]+))$/;

/**
 * The value of a resource.Quantity (`256Mi`, `1G`, `1.5Gi`, `2e9`, or an
 * integer as the CRD's int-or-string lets clients send it) in base units,
 * rounded up as Kubernetes rounds memory up to whole bytes.
 */
export function quantityValue(q: string | number): number {
  if (typeof q === 'number') return Math.ceil(q);
  const m = GRAMMAR.exec(q.trim());
  if (!m) throw new Error(`not a quantity: ${q}`);
  const n = Number(m[1]);
  const factor = m[2] ? BINARY[m[2]]! : m[4] !== undefined ? 10 ** Number(m[4]) : DECIMAL[m[3] ?? '']!;
  return Math.ceil(n * factor);
}

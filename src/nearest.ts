/** Edit distance between two short words (config keys, flag names). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** The known word a mistyped one most likely meant, when one is close enough to suggest. */
export function nearest(word: string, known: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: { word: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(lower, k.toLowerCase());
    if (!best || d < best.d) best = { word: k, d };
  }
  return best && best.d <= Math.max(2, Math.floor(word.length / 3)) ? best.word : undefined;
}

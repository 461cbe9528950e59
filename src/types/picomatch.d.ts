/** picomatch (CommonJS) ships no types: the one function used here (src/intake/names.ts), as its README gives it. */
declare module 'picomatch' {
  const picomatch: {
    makeRe(pattern: string, options: Record<string, boolean>): RegExp;
  };
  export default picomatch;
}

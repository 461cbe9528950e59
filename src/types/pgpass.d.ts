/** pgpass (a dependency of ours, also node-postgres's) ships no types: its one function, as its README gives it. */
declare module 'pgpass' {
  function pgpass(
    connInfo: { host: string; port: number | string; database: string; user: string },
    cb: (password: string | undefined) => void,
  ): void;
  export default pgpass;
}

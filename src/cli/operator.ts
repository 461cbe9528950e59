import { userInfo } from 'node:os';

/** Who asked, for the ledger: under sudo the person is SUDO_USER, not root. */
export function operatorName(): string {
  return process.env.SUDO_USER || userInfo().username;
}

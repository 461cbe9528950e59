/** The final folders a decided file leaves the intake for: loaded, duplicate and rejected files. */
export type Destination = 'archive' | 'duplicates' | 'rejected';

/** Where a file goes once its outcome is final: the run moves it there, the audit looks for it there. */
export const DESTINATION: Record<'loaded' | 'duplicate' | 'rejected', Destination> = {
  loaded: 'archive',
  duplicate: 'duplicates',
  rejected: 'rejected',
};

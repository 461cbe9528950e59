/** The final folders a decided file leaves the intake for: loaded, duplicate and rejected files. */
export type Destination = 'archive' | 'duplicates' | 'rejected';

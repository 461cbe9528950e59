// Rewrites the log events and metrics tables of docs/MONITORING.md from src/logEvents.ts and src/report/metricsFile.ts (run `npm run build` first).
import { readFileSync, writeFileSync } from 'node:fs';
import { withMonitoringTables } from '../dist/cli/monitoringDocs.js';

const path = new URL('../docs/MONITORING.md', import.meta.url);
writeFileSync(path, withMonitoringTables(readFileSync(path, 'utf8')));

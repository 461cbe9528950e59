// Rewrites the option table in docs/OPTIONS.md from src/config/optionTable.ts (run `npm run build` first).
import { readFileSync, writeFileSync } from 'node:fs';
import { OPTIONS_BEGIN, OPTIONS_END, optionsMarkdown } from '../dist/config/optionsReadme.js';

const path = new URL('../docs/OPTIONS.md', import.meta.url);
const readme = readFileSync(path, 'utf8');
const begin = readme.indexOf(OPTIONS_BEGIN);
const end = readme.indexOf(OPTIONS_END);
if (begin < 0 || end < begin) throw new Error(`docs/OPTIONS.md has no ${OPTIONS_BEGIN} … ${OPTIONS_END} section`);
writeFileSync(path, readme.slice(0, begin) + optionsMarkdown() + readme.slice(end + OPTIONS_END.length));

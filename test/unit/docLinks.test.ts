import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The pages a reader follows: the README, docs/, the runbook, the release notes, the contributors' page and the bench's diary. */
const PAGES = [
  'README.md',
  'RELEASE_NOTES.md',
  'CONTRIBUTING.md',
  'bench/DIARY.md',
  'ops/RUNBOOK.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...walkFiles('src').filter((file) => file.endsWith('/README.md')),
].filter((page) => existsSync(join(ROOT, page)));

/** Every file under a folder of the repository, as a path from the repository's root. */
function walkFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walkFiles(join(folder, entry.name)) : [join(folder, entry.name)],
  );
}

/** Every .ts file under a folder of the repository, as a path from the repository's root. */
const walkSources = (folder: string): string[] => walkFiles(folder).filter((file) => file.endsWith('.ts'));

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');
}

function anchorsOf(page: string): Set<string> {
  const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

/** Whether the package ships a file of the repository: an entry of package.json's `files` is a path, a folder, or a glob (a README of each room), as npm reads them. */
function inPackage(file: string): boolean {
  const shipped = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files;
  return shipped.some(
    (entry) => file === entry || file.startsWith(`${entry}/`) || (entry.includes('*') && picomatch.makeRe(entry, {}).test(file)),
  );
}

/** Every markdown link `[text](target)` outside code blocks, with its line. */
function linksOf(page: string): { target: string; line: number }[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const found: { target: string; line: number }[] = [];
  let inCode = false;
  lines.forEach((text, index) => {
    if (text.startsWith('```')) inCode = !inCode;
    if (inCode) return;
    for (const match of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) found.push({ target: match[1]!, line: index + 1 });
  });
  return found;
}

describe('the documentation', () => {
  it('has a README of at most 250 lines that introduces and links the reference pages', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    for (const page of PAGES.filter((p) => p.startsWith('docs/'))) expect(readme, page).toContain(`](${page})`);
  });

  it('links only to files of the repository and to headings that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const { target, line } of linksOf(page)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a web address
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), path));
        if (file.startsWith('..') || !existsSync(join(ROOT, file))) {
          broken.push(`${page}:${line}: ${target} (no such file in the repository)`);
          continue;
        }
        if (anchor !== undefined && file.endsWith('.md') && statSync(join(ROOT, file)).isFile() && !anchorsOf(file).has(anchor)) {
          broken.push(`${page}:${line}: ${target} (no heading "${anchor}" in ${file})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('links, in every page the package ships, only to files the package ships too (the installed docs stand alone)', () => {
    const outside: string[] = [];
    for (const page of PAGES.filter(inPackage)) {
      for (const { target, line } of linksOf(page)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a web address
        const path = target.split('#')[0]!;
        const file = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), path));
        if (!inPackage(file)) outside.push(`${page}:${line}: ${target}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('is what the code cites: every docs/ page a comment or message names exists', () => {
    const missing: string[] = [];
    for (const file of walkSources('src')) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(/\bdocs\/([A-Z_]+\.md)/g))
        if (!existsSync(join(ROOT, 'docs', match[1]!))) missing.push(`${file}: docs/${match[1]}`);
      if (/\.\.\/shared\/|(?<!docs\/)\bDESIGN\.md/.test(text)) missing.push(`${file}: cites a file outside the repository`);
    }
    expect(missing).toEqual([]);
  });
  it('names only source files that exist: every src/ path of docs/, and each file ARCHITECTURE.md gives a room', () => {
    const missing: string[] = [];
    for (const page of PAGES.filter((p) => p.startsWith('docs/'))) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const match of text.matchAll(/(?<![\w/.-])src\/[\w./-]*\w/g))
        if (!existsSync(join(ROOT, match[0]))) missing.push(`${page}: ${match[0]}`);
    }
    // the table of rooms names files by their room (`| 2 | `intake/` | … `openIntake.ts` …`), the rest of the page as `room/file.ts`
    const sources = walkSources('src').map((file) => relative(join(ROOT, 'src'), join(ROOT, file)));
    const architecture = readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const line of architecture.split('\n')) {
      const room = /^\|\s*\d+\s*\|\s*`(\w+)\/`/.exec(line)?.[1];
      for (const [, cited] of line.matchAll(/`([\w./-]+\.ts)`/g)) {
        if (cited!.startsWith('src/') || cited!.startsWith('test/')) continue;
        const found = cited!.includes('/')
          ? [cited!, `layout/${cited!}`, `${room}/${cited!}`].some((path) => sources.includes(path))
          : sources.some((path) => (room ? path.startsWith(`${room}/`) : true) && path.split('/').pop() === cited);
        if (!found) missing.push(`docs/ARCHITECTURE.md: ${room ? `${room}/: ` : ''}${cited!}`);
      }
    }
    // each room's README names its files as they are in that folder (`kind.ts`, `sftp/credentials.ts`)
    for (const readme of walkFiles('src').filter((file) => file.endsWith('/README.md'))) {
      const folder = relative(join(ROOT, 'src'), join(ROOT, dirname(readme)));
      const inFolder = sources.filter((path) => folder === '' || path.startsWith(`${folder}/`));
      for (const [, cited] of readFileSync(join(ROOT, readme), 'utf8').matchAll(/`([\w./-]+\.ts)`/g)) {
        const found = cited!.includes('/')
          ? [cited!, `${folder}/${cited!}`, `layout/${cited!}`].some((path) => sources.includes(path))
          : inFolder.some((path) => path.split('/').pop() === cited) || sources.some((path) => path.endsWith(`/${cited!}`));
        if (!found) missing.push(`${readme}: ${cited!}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("sends an alert's reader to the installed runbook: each rule's runbook_url is the shipped page where npm installs it, at a section it has", () => {
    const rules = load(readFileSync(join(ROOT, 'ops', 'settle-ingest.rules.yml'), 'utf8')) as {
      groups: { rules: { alert: string; annotations: Record<string, string> }[] }[];
    };
    const alerts = rules.groups.flatMap((group) => group.rules);
    expect(alerts.length).toBeGreaterThan(0);
    // npm's global root for Node.js from NodeSource or Debian (prefix /usr), as the rules file's header says
    const installed = 'file:///usr/lib/node_modules/settle-ingest/';
    const wrong: string[] = [];
    for (const { alert, annotations } of alerts) {
      const url = annotations.runbook_url ?? '';
      const [path, anchor] = url.slice(installed.length).split('#') as [string, string | undefined];
      if (
        !url.startsWith(installed) ||
        !inPackage(path) ||
        !existsSync(join(ROOT, path)) ||
        anchor === undefined ||
        !anchorsOf(path).has(anchor)
      ) {
        wrong.push(`${alert}: ${url}`);
      }
      if ('runbook' in annotations) wrong.push(`${alert}: a repository path as runbook: ${annotations.runbook}`);
    }
    expect(wrong).toEqual([]);
  });
});

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPTIONS_BEGIN, OPTIONS_END, optionsMarkdown } from '../../src/config/optionsReadme.js';
import { OPTION_TABLE, SETTING_KEYS } from '../../src/config/optionTable.js';
import { resolveSettings, settingPicker } from '../../src/config/settings.js';

const readme = readFileSync(new URL('../../docs/OPTIONS.md', import.meta.url), 'utf8');

describe('the one option table', () => {
  it('is the table in docs/OPTIONS.md, exactly (after changing an option: npm run build && node scripts/docs-options.mjs)', () => {
    const begin = readme.indexOf(OPTIONS_BEGIN);
    const end = readme.indexOf(OPTIONS_END);
    expect(begin).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(begin);
    expect(readme.indexOf(OPTIONS_BEGIN, begin + 1)).toBe(-1);
    expect(readme.slice(begin, end + OPTIONS_END.length)).toBe(optionsMarkdown());
  });

  it('gives every setting with a variable that variable, below a flag and above the config file', () => {
    for (const key of SETTING_KEYS) {
      const spec = OPTION_TABLE[key];
      if (spec.env === null) continue;
      const pick = settingPicker({}, { [spec.env]: 'from-env' });
      expect(pick(key), key).toEqual({ value: 'from-env', from: spec.env, source: 'environment' });
      if (spec.flag !== null) expect(settingPicker({ [key]: 'x' }, { [spec.env]: 'y' })(key)?.from).toBe(spec.flag);
    }
  });

  it('takes --mode from SETTLE_MODE and from the config file key "mode", flags first', () => {
    expect(resolveSettings({}, { SETTLE_MODE: 'manual' }).mode).toBe('manual');
    expect(resolveSettings({ mode: 'scheduled' }, { SETTLE_MODE: 'manual' }).mode).toBe('scheduled');
    expect(() => resolveSettings({}, { SETTLE_MODE: 'nightly' })).toThrow('SETTLE_MODE: "nightly" must be one of scheduled, manual');
    const config = join(mkdtempSync(join(tmpdir(), 'settle-options-')), 'config.json');
    writeFileSync(config, JSON.stringify({ mode: 'manual' }));
    expect(resolveSettings({ config }, {}).mode).toBe('manual');
    expect(resolveSettings({ config }, { SETTLE_MODE: 'scheduled' }).mode).toBe('scheduled');
  });
});

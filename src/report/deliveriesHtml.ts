import type { DayState, DeliveryDay } from './deliveries.js';
import { lateText } from './deliveries.js';
import { waiverWords } from './deliveryWaivers.js';
import { printable } from './printable.js';
import { expectWords, localTime, STATE_WORDS, stateWords, type DeliveriesReport, type PartnerReport } from './deliveriesReport.js';

/**
 * `report deliveries --html FILE`: one self-contained page (inline CSS and SVG; no script, no
 * font or image from anywhere) that reads the same with JavaScript off and prints on paper: per
 * partner a calendar of its due days coloured by how each stands, the weekly counts as stacked
 * bars, and the days that need a word with the partner, listed.
 */

const COLOURS: Record<DayState, { fill: string; ink: string }> = {
  on_time: { fill: '#2e7d32', ink: '#ffffff' },
  late: { fill: '#f0a202', ink: '#1a1a1a' },
  missing: { fill: '#c62828', ink: '#ffffff' },
  rejected: { fill: '#6a1b9a', ink: '#ffffff' },
  due: { fill: '#ffe0b2', ink: '#1a1a1a' },
  not_due: { fill: '#ffffff', ink: '#555555' },
  not_owed: { fill: '#eceff1', ink: '#607d8b' },
  waived: { fill: '#b0bec5', ink: '#1a1a1a' },
};

const BARS: { key: 'onTime' | 'late' | 'missing' | 'rejected'; state: DayState; label: string }[] = [
  { key: 'onTime', state: 'on_time', label: 'on time' },
  { key: 'late', state: 'late', label: 'late' },
  { key: 'rejected', state: 'rejected', label: 'rejected' },
  { key: 'missing', state: 'missing', label: 'missing' },
];

/** Text on the page: its control and format characters spelled out (printable, as every report), then HTML-escaped. */
const escape = (text: string) =>
  printable(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A day's mark inside its calendar cell: what changed, in a few characters. */
function cellMark(d: DeliveryDay): string {
  if (d.state === 'on_time') return '✓';
  if (d.state === 'late') return `+${lateText(d.lateSeconds ?? 0)}`;
  if (d.state === 'missing') return 'missing';
  if (d.state === 'rejected') return 'rejected';
  if (d.state === 'due') return 'due';
  if (d.state === 'waived') return 'waived';
  if (d.state === 'not_owed') return d.notOwedBecause === 'weekend' ? '' : d.notOwedBecause === 'not a delivery day' ? '–' : 'holiday';
  return '';
}

/** What a person reads when they point at a day (a `<title>`: a tooltip, no script). */
function cellTitle(d: DeliveryDay, zone: string): string {
  const state = d.state === 'not_owed' ? `not owed: ${d.notOwedBecause}` : stateWords(d);
  const loaded = d.deliveredAt ? `; loaded ${localTime(d.deliveredAt, zone)}` : '';
  const late =
    d.lateSeconds !== null && d.state !== 'due'
      ? `, ${lateText(d.lateSeconds)} ${d.deliveredAt ? 'after' : 'past'} ${localTime(d.dueBy, zone)}`
      : '';
  const files = d.files.map((f) => `${f.name} (${f.outcome})`).join(', ');
  return `${d.weekday} ${d.day}: ${state}${loaded}${late}${files ? `; ${files}` : ''}`;
}

const CELL = 46;
const GAP = 4;
const LEFT = 54;
const TOP = 22;

/** The calendar: a row per ISO week, Monday first, each due day a coloured square with its day of the month. */
function calendarSvg(partnerReport: PartnerReport, zone: string): string {
  if (partnerReport.days.length === 0) return '';
  const first = partnerReport.days[0]!;
  const lead = (new Date(`${first.day}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday 0
  const rows = Math.ceil((lead + partnerReport.days.length) / 7);
  const width = LEFT + 7 * (CELL + GAP);
  const height = TOP + rows * (CELL + GAP);
  const heads = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
    .map((w, i) => `<text x="${LEFT + i * (CELL + GAP) + CELL / 2}" y="14" class="head">${w}</text>`)
    .join('');
  const cells = partnerReport.days
    .map((deliveryDay, i) => {
      const at = lead + i;
      const x = LEFT + (at % 7) * (CELL + GAP);
      const y = TOP + Math.floor(at / 7) * (CELL + GAP);
      const c = COLOURS[deliveryDay.state];
      const dashed = deliveryDay.state === 'not_due' ? ' stroke-dasharray="4 3"' : '';
      const monthLabel =
        at % 7 === 0 || i === 0
          ? `<text x="${LEFT - 8}" y="${y + CELL / 2 + 4}" class="week">${new Date(`${deliveryDay.day}T12:00:00Z`).toLocaleString('en-GB', { month: 'short', timeZone: 'UTC' })} ${deliveryDay.day.slice(8)}</text>`
          : '';
      return `${monthLabel}<g class="day ${deliveryDay.state}"><title>${escape(cellTitle(deliveryDay, zone))}</title><rect x="${x}" y="${y}" width="${CELL}" height="${CELL}" rx="6" fill="${c.fill}" stroke="#90a4ae"${dashed}/><text x="${x + 6}" y="${y + 15}" class="num" fill="${c.ink}">${Number(deliveryDay.day.slice(8))}</text><text x="${x + CELL / 2}" y="${y + CELL - 9}" class="mark" fill="${c.ink}">${escape(cellMark(deliveryDay))}</text></g>`;
    })
    .join('');
  return `<svg role="img" aria-label="${escape(`calendar of ${partnerReport.partner}'s deliveries`)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${heads}${cells}</svg>`;
}

/** The weekly counts as stacked bars: on time, late, rejected, missing. */
function weeksSvg(partnerReport: PartnerReport): string {
  if (partnerReport.weeks.length === 0) return '';
  const barWidth = 34;
  const step = 56;
  const plot = 170;
  const top = 20;
  const max = partnerReport.weeks.reduce(
    (most, weekCounts) => Math.max(most, weekCounts.onTime + weekCounts.late + weekCounts.missing + weekCounts.rejected),
    1,
  );
  const left = 30;
  const width = left + partnerReport.weeks.length * step + 10;
  const height = top + plot + 40;
  const unit = plot / max;
  const ticks = [...new Set([0, Math.ceil(max / 2), max])]
    .map((t) => {
      const y = top + plot - t * unit;
      return `<line x1="${left - 4}" x2="${width - 6}" y1="${y}" y2="${y}" class="grid"/><text x="${left - 8}" y="${y + 4}" class="tick">${t}</text>`;
    })
    .join('');
  const bars = partnerReport.weeks
    .map((w, i) => {
      const x = left + i * step + (step - barWidth) / 2;
      let y = top + plot;
      const parts = BARS.filter((b) => w[b.key] > 0)
        .map((b) => {
          const h = w[b.key] * unit;
          y -= h;
          return `<rect x="${x}" y="${y}" width="${barWidth}" height="${h}" fill="${COLOURS[b.state].fill}"><title>${escape(`${w.week}: ${w[b.key]} ${b.label}`)}</title></rect>`;
        })
        .join('');
      const total = w.onTime + w.late + w.missing + w.rejected;
      const extra = w.skipped + w.held > 0 ? ` · ${w.skipped + w.held} skip/hold` : '';
      return `${parts}<text x="${x + barWidth / 2}" y="${y - 5}" class="total">${total}</text><text x="${x + barWidth / 2}" y="${top + plot + 18}" class="label">${w.week.slice(5)}</text><text x="${x + barWidth / 2}" y="${top + plot + 32}" class="sub">${escape(extra.replace(' · ', ''))}</text>`;
    })
    .join('');
  return `<svg role="img" aria-label="${escape(`${partnerReport.partner}: due days per week`)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${ticks}${bars}</svg>`;
}

const PROBLEMS: DayState[] = ['missing', 'rejected', 'late', 'due'];

function dayRows(p: PartnerReport, zone: string): string {
  const owed = [...p.days].reverse().filter((d) => d.state !== 'not_owed' || d.files.length > 0);
  if (owed.length === 0) return '<p class="none">No due days in this period yet.</p>';
  const rows = owed
    .map((d) => {
      const files = d.files
        .map((f) => `<li class="${f.outcome}">${escape(f.name)} <span>${f.outcome}${f.why ? `: ${escape(f.why)}` : ''}</span></li>`)
        .join('');
      const state = d.state === 'not_owed' ? `not owed (${escape(d.notOwedBecause ?? '')})` : STATE_WORDS[d.state];
      // a waiver says who waived the day, when and why, beside its chip
      const waiver = d.waiver ? ` <span class="waiver">${escape(waiverWords(d.waiver))}</span>` : '';
      const late = d.lateSeconds !== null && d.state !== 'due' ? lateText(d.lateSeconds) : '';
      return `<tr class="${PROBLEMS.includes(d.state) ? 'problem ' : ''}${d.state}"><td class="when">${d.weekday} ${d.day}</td><td><span class="chip ${d.state}">${state}</span>${waiver}</td><td>${d.deliveredAt ? localTime(d.deliveredAt, zone) : '–'}</td><td class="late">${late}</td><td>${files ? `<ul>${files}</ul>` : '–'}</td></tr>`;
    })
    .join('');
  return `<table><thead><tr><th>Due day</th><th>State</th><th>Loaded (${escape(zone)})</th><th>Late</th><th>Files</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function partnerSection(p: PartnerReport): string {
  const id = `partner-${p.partner}`;
  if (!p.expect) {
    return `<section class="partner" id="${id}"><h2>${escape(p.partner)}</h2><p class="expect">No <code>expect</code> in its settings: its deliveries are not judged.</p></section>`;
  }
  const zone = p.expect.timeZone;
  const count = (s: DayState) => p.days.filter((d) => d.state === s).length;
  const summary = (['on_time', 'late', 'rejected', 'missing', 'waived'] as DayState[])
    .map((s) => `<span class="chip ${s}">${count(s)} ${STATE_WORDS[s].toLowerCase()}</span>`)
    .join(' ');
  const verdict = count('missing') + count('rejected') > 0 ? 'attention' : count('late') > 0 ? 'late' : 'clean';
  return `<section class="partner ${verdict}" id="${id}">
<h2>${escape(p.partner)}</h2>
<p class="expect">${escape(expectWords(p.expect))}</p>
<p class="summary">${summary}</p>
<div class="charts"><figure><figcaption>Calendar</figcaption>${calendarSvg(p, zone)}</figure><figure><figcaption>Due days per ISO week</figcaption>${weeksSvg(p)}</figure></div>
${dayRows(p, zone)}
</section>`;
}

const STYLE = `
:root { color-scheme: light; --ink: #1a1a1a; --muted: #5f6b73; --rule: #d5dbe0; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #f6f8f9; }
header { background: #263238; color: #fff; padding: 20px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
header p { margin: 0; color: #cfd8dc; }
main { padding: 16px 32px 40px; max-width: 1200px; }
.legend { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0 0; padding: 0; list-style: none; }
a { color: #1565c0; }
section.partner { background: #fff; border: 1px solid var(--rule); border-left: 6px solid #2e7d32; border-radius: 8px; padding: 16px 22px; margin: 18px 0; }
section.partner.late { border-left-color: #f0a202; }
section.partner.attention { border-left-color: #c62828; }
h2 { margin: 0; font-size: 20px; }
.expect { margin: 2px 0 8px; color: var(--muted); }
.summary { margin: 0 0 10px; }
.chip { display: inline-block; padding: 1px 9px; border-radius: 10px; font-size: 13px; white-space: nowrap; border: 1px solid #90a4ae; color: var(--ink); background: #fff; }
.chip.on_time { background: #2e7d32; color: #fff; border-color: #2e7d32; }
.chip.late { background: #f0a202; color: #1a1a1a; border-color: #f0a202; }
.chip.missing { background: #c62828; color: #fff; border-color: #c62828; }
.chip.rejected { background: #6a1b9a; color: #fff; border-color: #6a1b9a; }
.chip.due { background: #ffe0b2; }
.chip.not_due { background: #fff; border-style: dashed; }
.chip.not_owed { background: #eceff1; color: #607d8b; }
.chip.waived { background: #b0bec5; border-color: #90a4ae; }
.waiver { color: var(--muted); font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; }
figure { margin: 6px 0 12px; }
figcaption { font-size: 13px; color: var(--muted); margin-bottom: 4px; text-transform: uppercase; letter-spacing: .04em; }
svg text { font-family: inherit; }
svg .head { font-size: 12px; fill: #5f6b73; text-anchor: middle; }
svg .week { font-size: 11px; fill: #5f6b73; text-anchor: end; }
svg .num { font-size: 12px; font-weight: 600; }
svg .mark { font-size: 10px; text-anchor: middle; }
svg .grid { stroke: #e3e8eb; }
svg .tick { font-size: 11px; fill: #5f6b73; text-anchor: end; }
svg .total { font-size: 12px; text-anchor: middle; fill: #1a1a1a; }
svg .label { font-size: 12px; text-anchor: middle; fill: #1a1a1a; }
svg .sub { font-size: 10px; text-anchor: middle; fill: #5f6b73; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--rule); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 13px; }
td.when { white-space: nowrap; }
tr.problem td.when { font-weight: 600; }
table.overview { width: auto; margin: 10px 0 4px; background: #fff; border: 1px solid var(--rule); border-radius: 8px; }
table.overview td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.overview td.n.bad { color: #c62828; font-weight: 600; }
tr.missing td, tr.rejected td { background: #fff5f5; }
td.late { font-variant-numeric: tabular-nums; white-space: nowrap; }
td ul { margin: 0; padding: 0; list-style: none; }
td li span { color: var(--muted); font-size: 13px; }
td li.rejected span, td li.skipped span, td li.held span { font-style: italic; }
.none { color: var(--muted); }
footer { color: var(--muted); font-size: 13px; padding: 0 32px 32px; }
@media print { body { background: #fff; } header { background: #fff; color: #000; border-bottom: 2px solid #000; } header p { color: #333; } section.partner { break-inside: avoid; } }
`;

/** All partners at a glance: the counts of the period, the problem days in red. */
function overview(r: DeliveriesReport): string {
  const rows = r.partners
    .map((p) => {
      if (!p.expect)
        return `<tr><td><a href="#partner-${escape(p.partner)}">${escape(p.partner)}</a></td><td colspan="5">not judged (no <code>expect</code>)</td></tr>`;
      const n = (s: DayState) => p.days.filter((d) => d.state === s).length;
      const cell = (s: DayState, bad: boolean) => `<td class="n${bad && n(s) > 0 ? ' bad' : ''}">${n(s)}</td>`;
      const worst = [...p.days].reverse().find((d) => d.state === 'missing' || d.state === 'rejected');
      const latest = worst ? `${worst.weekday} ${worst.day} ${STATE_WORDS[worst.state].toLowerCase()}` : '–';
      return `<tr><td><a href="#partner-${escape(p.partner)}">${escape(p.partner)}</a></td>${cell('on_time', false)}${cell('late', false)}${cell('rejected', true)}${cell('missing', true)}<td>${latest}</td></tr>`;
    })
    .join('');
  return `<table class="overview"><thead><tr><th>Partner</th><th>On time</th><th>Late</th><th>Rejected</th><th>Missing</th><th>Latest gap</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function deliveriesHtml(deliveriesReport: DeliveriesReport): string {
  const legend = (['on_time', 'late', 'rejected', 'missing', 'waived', 'due', 'not_due', 'not_owed'] as DayState[])
    .map((s) => `<li><span class="chip ${s}">${STATE_WORDS[s]}</span></li>`)
    .join('');
  const generated = deliveriesReport.generatedAt.replace('T', ' ').slice(0, 16);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>settle-ingest: deliveries, last ${deliveriesReport.weeksBack} weeks (${generated} UTC)</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>Settlement deliveries: owed and received</h1>
<p>Last ${deliveriesReport.weeksBack} weeks, generated ${generated} UTC from the settle-ingest ledger. A day is on time when its files loaded into the finance database by its due time; a rejected file arrived but was not delivered; a skipped resend is not a delivery.</p>
<ul class="legend">${legend}</ul>
</header>
<main>
${overview(deliveriesReport)}
${deliveriesReport.partners.map(partnerSection).join('\n')}
</main>
<footer>settle-ingest report deliveries — point at a day in a calendar for its files; every figure here is also in <code>settle-ingest report deliveries --json</code>.</footer>
</body>
</html>
`;
}

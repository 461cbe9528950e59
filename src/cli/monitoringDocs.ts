import { LOG_EVENTS, type LogEvent, type LogEventSpec } from '../logEvents.js';
import { METRICS, type MetricName, type MetricSpec } from '../report/metricsFile.js';
import { snake } from './jsonOutput.js';

/** docs/MONITORING.md holds each generated table between its two lines; test/unit/monitoringDocs.test.ts keeps them equal. */
export const LOG_EVENTS_BEGIN = '<!-- log-events:begin (generated from src/logEvents.ts) -->';
export const LOG_EVENTS_END = '<!-- log-events:end -->';
export const METRICS_BEGIN = '<!-- metrics:begin (generated from src/report/metricsFile.ts) -->';
export const METRICS_END = '<!-- metrics:end -->';

const cell = (text: string) => text.replaceAll('|', '\\|');
const code = (text: string) => `\`${cell(text)}\``;
const list = (words: readonly string[]) => (words.length ? words.map(code).join(', ') : '—');

/** Every log event of the table, as the log file writes it (fields in snake_case, cli/logger.ts). */
export function logEventsMarkdown(): string {
  const row = (name: LogEvent) => {
    const spec: LogEventSpec = LOG_EVENTS[name];
    const levels = typeof spec.level === 'string' ? [spec.level] : spec.level;
    return `| ${code(name)} | ${levels.join(', ')} | ${list(spec.fields.map(snake))} | ${cell(spec.meaning)} |`;
  };
  return [
    LOG_EVENTS_BEGIN,
    '| event | level | fields | meaning |',
    '| --- | --- | --- | --- |',
    ...(Object.keys(LOG_EVENTS) as LogEvent[]).map(row),
    LOG_EVENTS_END,
  ].join('\n');
}

/** Every metric family the metrics file and /metrics can hold. */
export function metricsMarkdown(): string {
  const row = (name: MetricName) => {
    const spec: MetricSpec = METRICS[name];
    return `| ${code(name)} | ${spec.type} | ${list(spec.labels)} | ${spec.watch ? '`watch`' : 'every run'} | ${cell(spec.help)} |`;
  };
  return [
    METRICS_BEGIN,
    '| metric | type | labels | written by | meaning |',
    '| --- | --- | --- | --- | --- |',
    ...(Object.keys(METRICS) as MetricName[]).map(row),
    METRICS_END,
  ].join('\n');
}

/** MONITORING.md with its generated tables made anew; an error when a pair of lines is missing. */
export function withMonitoringTables(markdown: string): string {
  let text = markdown;
  for (const [begin, end, table] of [
    [LOG_EVENTS_BEGIN, LOG_EVENTS_END, logEventsMarkdown()],
    [METRICS_BEGIN, METRICS_END, metricsMarkdown()],
  ] as const) {
    const from = text.indexOf(begin);
    const to = text.indexOf(end);
    if (from < 0 || to < from) throw new Error(`docs/MONITORING.md has no ${begin} … ${end} section`);
    text = text.slice(0, from) + table + text.slice(to + end.length);
  }
  return text;
}

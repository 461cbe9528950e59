import { unlink } from 'node:fs/promises';
import type { Logger } from '../logEvents.js';
import { errorMessage } from '../errors.js';
import type { Intake } from '../intake/intake.js';
import type { Destination } from '../destination.js';
import { stageAndHash } from './stageAndHash.js';

/** The ready marker follows its file into the same folder (best effort: a marker left behind is harmless). */
export async function moveMarker(
  opts: { intake: Intake; readyMarker?: string | undefined },
  name: string,
  to: Destination,
  stagingDir: string,
  tag: string,
  /** the run moving the file, which moves its marker too */
  movingRun: string,
  log: Logger,
): Promise<void> {
  if (!opts.readyMarker) return;
  const markerName = name + opts.readyMarker;
  try {
    const entry = await opts.intake.stat(markerName);
    if (!entry) return;
    const staged = await stageAndHash(opts.intake, entry, stagingDir, tag);
    if (staged.kind !== 'staged') return;
    try {
      const decided = { pin: staged.pin, stagedPath: staged.path, sha256: staged.sha256, movingRun, sample: staged.sample };
      const routed = await opts.intake.route(markerName, to, decided);
      log.info({ event: 'marker-moved', to: routed.location }, `its ready marker moved to ${routed.location}`);
    } finally {
      await unlink(staged.path).catch(() => undefined);
    }
  } catch (err) {
    log.warn(
      { event: 'marker-not-moved', reason: errorMessage(err) },
      `its ready marker ${markerName} stays in the intake: ${errorMessage(err)}`,
    );
  }
}

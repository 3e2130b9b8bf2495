import type { BenchProgress } from '../../load/types.js';

/** What one lane is doing now, for the live progress of a run on lanes. */
export type LaneActivity =
  | { kind: 'starting'; config: string; block: number }
  | { kind: 'measuring'; trial: string; completed: number; total: number; warmingUp: boolean }
  | { kind: 'waiting' }
  | { kind: 'done' }
  | { kind: 'left' };

export interface LaneState {
  name: string;
  activity: LaneActivity;
  /** Trials this lane stored in this process. */
  measured: number;
}

/** Every lane's state and the run's trials stored so far (those of an earlier process included) of those planned. */
export interface LanesView {
  lanes: LaneState[];
  measured: number;
  planned: number;
}

/**
 * The live state of each lane (run/lanes.ts sets it as a lane takes a stretch, measures, waits, ends; the lane's
 * TrialConsumers report its trials' progress): each change goes to `onChange` (the CLI draws it). Pure bookkeeping.
 */
export class LaneBoard {
  private readonly states: LaneState[];

  constructor(
    names: readonly string[],
    private readonly counts: { before: number; planned: () => number },
    private readonly onChange: (view: LanesView) => void,
  ) {
    this.states = names.map((name) => ({ name, activity: { kind: 'waiting' }, measured: 0 }));
  }

  set(lane: number, activity: LaneActivity): void {
    this.states[lane]!.activity = activity;
    this.emit();
  }

  /** A trial's load progress on `lane` (its warm-up shown as such, never as the trial's requests). */
  progress(lane: number, trial: string, progress: BenchProgress, warmingUp: boolean): void {
    this.set(lane, { kind: 'measuring', trial, completed: warmingUp ? 0 : progress.completed, total: warmingUp ? 0 : progress.total, warmingUp });
  }

  stored(lane: number): void {
    this.states[lane]!.measured += 1;
    this.emit();
  }

  view(): LanesView {
    const measured = this.counts.before + this.states.reduce((total, state) => total + state.measured, 0);
    return { lanes: this.states.map((state) => ({ ...state })), measured, planned: this.counts.planned() };
  }

  private emit(): void {
    this.onChange(this.view());
  }
}

/** The live progress of a run on lanes: "lanes: 5/8 trials stored", then a line per lane (its state, trials it stored). */
export function formatLanesView(view: LanesView): string[] {
  return [
    `lanes: ${view.measured}/${view.planned} trials stored`,
    ...view.lanes.map((lane) => `  ${lane.name}: ${activityText(lane.activity)} (${lane.measured} stored)`),
  ];
}

/** The same in one line, for a log that is not a terminal: "lanes: 5/8 trials stored · lane1 trial 6/8 … · lane2 …". */
export function formatLanesLine(view: LanesView): string {
  return [`lanes: ${view.measured}/${view.planned} trials stored`, ...view.lanes.map((lane) => `${lane.name} ${activityText(lane.activity)}`)].join(' · ');
}

function activityText(activity: LaneActivity): string {
  switch (activity.kind) {
    case 'starting':
      return `starting ${activity.config} (block ${activity.block})`;
    case 'measuring':
      return activity.warmingUp ? `${activity.trial}, warming up` : `${activity.trial}, ${activity.completed}/${activity.total} requests`;
    case 'waiting':
      return 'waiting for a block';
    case 'done':
      return 'done';
    case 'left':
      return 'left the run';
  }
}

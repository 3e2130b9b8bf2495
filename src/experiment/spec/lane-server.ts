import type { ResolvedLane, ServerConfig } from './types.js';

/**
 * A server config as one lane runs it: the lane's env over the server's, its port range. Its startup history is
 * recorded under this config's key, so the runner (run/lanes.ts) and the prediction (plan/budget.ts) both use it.
 */
export function laneServer(server: ServerConfig, lane: ResolvedLane): ServerConfig {
  return {
    ...server,
    env: { ...server.env, ...lane.env },
    unsetEnv: server.unsetEnv.filter((name) => !(name in lane.env)),
    ...(lane.portRange !== undefined && { portRange: lane.portRange }),
  };
}

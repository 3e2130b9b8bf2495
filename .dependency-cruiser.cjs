/**
 * servelab's layers, lowest first: a module may import from its own layer and the layers below it, never above.
 * ARCHITECTURE.md explains the order. `npm run depcheck` enforces it.
 */
const LAYERS = [
  'util',
  'config',
  'profiles',
  'metrics',
  'fingerprint',
  'telemetry',
  'store',
  'ready',
  'launch',
  'load',
  'exec',
  'experiment',
  'report',
  'ui',
  'cli',
];

/** src/version.ts is part of the bottom layer; src/index.ts (the library API) is at the top, beside cli. */
const folder = (name) => (name === 'util' ? '^src/(util/|version\\.ts$)' : name === 'cli' ? '^src/(cli/|index\\.ts$)' : `^src/${name}/`);

const layerRules = LAYERS.slice(0, -1).map((name, index) => ({
  name: `layer-${name}`,
  comment: `${name} is below ${LAYERS.slice(index + 1).join(', ')}: it must not import them`,
  severity: 'error',
  from: { path: folder(name) },
  to: { path: LAYERS.slice(index + 1).map(folder) },
}));

/**
 * src/experiment's floors, lowest first: spec (file schema, loading, types) < analysis (pure statistics, verdicts,
 * drift rule, best config, race) < plan (plan, schedule, budget) < text (formatting) < run (runner, journal, server
 * lifecycle, finalize, Slurm). The readers above (report, ui) see results, never the machinery that produced them.
 */
const EXPERIMENT_FLOORS = ['spec', 'analysis', 'plan', 'text', 'run'];
const floor = (name) => `^src/experiment/${name}/`;
const floorRules = EXPERIMENT_FLOORS.slice(0, -1).map((name, index) => ({
  name: `experiment-${name}`,
  comment: `experiment/${name} is below ${EXPERIMENT_FLOORS.slice(index + 1).join(', ')}: it must not import them`,
  severity: 'error',
  from: { path: floor(name) },
  to: { path: EXPERIMENT_FLOORS.slice(index + 1).map(floor) },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    ...floorRules,
    {
      name: 'readers-not-from-the-runner',
      comment: 'report and ui read stored results: they must not import the runner or the planner',
      severity: 'error',
      from: { path: ['^src/report/', '^src/ui/'] },
      to: { path: [floor('run'), floor('plan')] },
    },
    {
      name: 'every-src-folder-is-a-layer',
      comment: 'a new folder under src/ must be placed in LAYERS (or be simulate/) so the layer rules see it',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/[^/]+/', pathNot: [...LAYERS.map(folder), '^src/simulate/'] },
    },
    {
      name: 'simulate-stands-alone',
      comment: 'the simulator is a separate program (a fake server): it uses util and config only, and only cli starts it',
      severity: 'error',
      from: { path: '^src/simulate/' },
      to: { path: '^src/', pathNot: ['^src/simulate/', folder('util'), folder('config')] },
    },
    {
      name: 'simulate-only-from-cli',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/simulate/', folder('cli')] },
      to: { path: '^src/simulate/' },
    },
    {
      name: 'no-circular',
      comment: 'no import cycles; a cycle made only of type imports (erased at build time) is allowed',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    { name: 'src-not-from-tests', severity: 'error', from: { path: '^src/' }, to: { path: '^(test|bench)/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};

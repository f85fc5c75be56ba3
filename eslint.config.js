// Type-aware lint for everything we write by hand: src/, test/, bench/, deploy/ and the config files.
// Formatting is Prettier's job (.prettierrc.json); no rule enabled here formats code, so the two
// never disagree and eslint-config-prettier is not needed.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The no-unsafe-* family, off: for code that handles untyped JSON by nature (see where it is used). */
const NO_UNSAFE_OFF = Object.fromEntries(
  ['no-unsafe-argument', 'no-unsafe-assignment', 'no-unsafe-call', 'no-unsafe-member-access', 'no-unsafe-return'].map((r) => [
    `@typescript-eslint/${r}`,
    'off',
  ]),
);

export default defineConfig(
  // Generated (lib/, dist/, imports/ from `cdk8s import`), recorded (bench/results/) or local state.
  globalIgnores(['lib/', 'dist/', 'imports/', 'bench/results/', '**/.state/', '.cache/']),
  js.configs.recommended,
  // strict-type-checked rather than recommended-type-checked: it adds rules that find real mistakes
  // (no-deprecated, use-unknown-in-catch-callback-variable, no-unnecessary-type-conversion, ...) at
  // the cost of a few dozen fixes. stylistic-type-checked is left out: on this code it is mostly
  // dot-notation and `!` versus `as`, i.e. churn without a bug behind it.
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        // Each file gets the program of its nearest tsconfig.json, as in the editor. The JS files
        // that no tsconfig includes are linted with type information from the default project.
        projectService: { allowDefaultProject: ['eslint.config.js', 'deploy/argocd/*.mjs', 'src/reconciler/image-files.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The async rules this project relies on, spelled out so that no preset change can drop them.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'error',
      // A promise returned from inside try/catch/finally must be awaited there, or the handler never
      // sees its rejection; elsewhere `return await` only adds a tick.
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/prefer-nullish-coalescing': 'error',
      // Same convention as tsc's noUnusedLocals/noUnusedParameters: a leading _ marks "unused on purpose".
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // Numbers in messages and names are everywhere and always print as intended.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // The strict rules below are off on purpose:
      // - no-unnecessary-condition: the spec readers check untrusted YAML through views typed as the
      //   valid shape, so every defensive check there reads as "unnecessary" (about 50 reports).
      // - no-confusing-void-expression: `() => void call()` shorthand is idiomatic in callbacks.
      // - no-non-null-assertion: with noUncheckedIndexedAccess, `xs[i]!` after a length check is the
      //   honest spelling; banning it only moves the assertion elsewhere.
      // - no-unsafe-class-instance-assignment: @kubernetes/client-node's models are classes that are
      //   plain data on the wire; object literals are how its own examples build them.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-confusing-void-expression': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
  {
    // Tests and benchmarks read synthesized manifests and apiserver answers as untyped JSON: the
    // no-unsafe-* family would report every field access of a fixture, not a mistake. src/ and
    // harness/ keep them on. The promise rules still apply everywhere.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: NO_UNSAFE_OFF,
  },
  {
    // Plain JavaScript has no annotations, so every JSON.parse or untyped parameter is `any`: the
    // no-unsafe-* rules would report the language, not a mistake. The promise rules still apply.
    files: ['**/*.js', '**/*.mjs'],
    rules: NO_UNSAFE_OFF,
  },
);

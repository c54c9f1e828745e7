// ESLint (flat config): the recommended rules of ESLint and typescript-eslint (the set that
// needs no type information, so a run stays fast), plus the project's own: no `any` in the
// library, unused names only when they say so with a leading underscore. Formatting is
// Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The code users run: the entries, the kernel, the plugins, the CLI, the certificate maker. */
const LIBRARY = ['index.ts', 'kernel/**/*.ts', 'plugins/**/*.ts', 'cli/**/*.ts', 'tls/**/*.ts'];

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test/artifacts/', '.scratch/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // `_name` marks a parameter or binding left unused on purpose (a callback's shape, a rest sibling that drops a key).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // `== null` stands for "null or undefined"; every other comparison is strict.
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // HTTP's grammar is about control characters: the codec's and the tests' patterns name them on purpose.
      'no-control-regex': 'off',
      // `interface ReadRequestOptions extends HeadLimits {}` gives a set of options its own name.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
    },
  },
  {
    files: LIBRARY,
    rules: {
      // A public signature says what it takes; `unknown` where it cannot.
      '@typescript-eslint/no-explicit-any': 'error',
      // The library writes through its callers' loggers and streams, never the console.
      'no-console': 'error',
    },
  },
  {
    // Tests, benches and examples may take shortcuts the library may not.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The demo page's script runs in the browser.
    files: ['examples/demo/public/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
);

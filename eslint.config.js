// ESLint flat config: typescript-eslint's type-aware rules, because the bugs that
// hurt a controller runtime most (a floating promise, a misused async callback)
// are only visible with type information.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Forbids files matching `files` to import (statically or with import()) a module whose specifier matches `regex`. */
function seam(files, regex, message) {
  return [
    {
      files: [files],
      rules: {
        'no-restricted-imports': ['error', { patterns: [{ regex, message }] }],
        'no-restricted-syntax': [
          'error',
          { selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\/')}/]`, message },
        ],
      },
    },
  ];
}

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // The database controller's engine seam (apps/database-controller/src/engine.ts):
  // replication/ drives any engine through the neutral interfaces, and an
  // engine's folder builds its pieces without the replication reconcile, so
  // neither side imports the other. import() is checked as well: drivers load
  // their SQL modules lazily, and a dynamic import would cross the seam unseen.
  ...seam(
    'apps/database-controller/src/replication/**/*.ts',
    '(^|/)(postgres|mariadb|mysql|engines)/',
    'replication/ is engine-neutral: take what an engine does from ../engine.ts (the caller passes its InstanceDriver)',
  ),
  ...seam(
    'apps/database-controller/src/{postgres,mariadb,mysql,engines}/**/*.ts',
    '(^|/)replication/',
    'an engine folder does not import replication/: shared pieces live in neutral modules (../engine.ts, ../instance-env.ts, @regulon/conventions)',
  ),
  {
    files: ['**/*.test.ts', '**/*.bench.ts', '**/testing/*-suite.ts'],
    rules: {
      // node:test's describe/it return promises the runner awaits itself.
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);

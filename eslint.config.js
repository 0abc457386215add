// ESLint flat config: typescript-eslint's recommended rules; formatting is Prettier's (`npm run lint` runs both).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/', 'data/', '.test-data/', 'bench/.results/', 'node_modules/', 'dashboard/dist/', 'test-artifacts/', '.test-server-*/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_`-prefixed names mark parameters and bindings kept on purpose (interface shape, destructuring out).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // One composition root (src/services.ts) builds every repository and service once; modules receive them
    // through constructors (src/modules/README.md, "Composition root").
    files: ['src/modules/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/Service$/]',
          message: 'Services are built once in src/services.ts and passed in through constructors.',
        },
        {
          selector: 'NewExpression[callee.name=/Repository$/]',
          message: 'Repositories are built once in src/repositories.ts and passed in through constructors.',
        },
      ],
      // A module reads another's tables through that module's services or record functions, never its repository.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // `../<module>/…`: another module (platform imports start with `../../`).
              regex: '^\\.\\./[\\w-]+/',
              importNamePattern: '^[A-Z]\\w*Repository$',
              message: "Use the owning module's service or record functions, not its repository.",
            },
          ],
        },
      ],
    },
  },
  {
    // The pipeline (src/pipeline) is built by the same composition root; it is one area, so its stages share
    // their repositories, but a module's tables it reads through that module's services or record functions.
    files: ['src/pipeline/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/Service$/]',
          message: 'Services are built once in src/services.ts and passed in through constructors.',
        },
        {
          selector: 'NewExpression[callee.name=/Repository$/]',
          message: 'Repositories are built once in src/repositories.ts and passed in through constructors.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+modules/',
              importNamePattern: '^[A-Z]\\w*Repository$',
              message: "Use the owning module's service or record functions, not its repository.",
            },
          ],
        },
      ],
    },
  },
  {
    // An adapter (src/adapters/, the Ancla-shaped routes) only maps HTTP onto the modules' services: it builds none.
    files: ['src/adapters/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/(Service|Repository)$/]',
          message: "An adapter maps HTTP onto the modules' services, built once in src/services.ts; it builds none.",
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(modules|pipeline)/',
              importNamePattern: '^[A-Z]\\w*Repository$',
              message: "Use the owning module's service, not its repository.",
            },
          ],
        },
      ],
    },
  },
  {
    // A module's wire() (and the pipeline's) builds its own services (its repositories still come from src/repositories.ts).
    files: ['src/modules/*/wire.ts', 'src/pipeline/wire.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/Repository$/]',
          message: 'Repositories are built once in src/repositories.ts and passed in through constructors.',
        },
      ],
    },
  },
  {
    // A repository may rebuild itself over a transaction.
    files: ['src/modules/**/*.repository.ts', 'src/pipeline/**/*.repository.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/Service$/]',
          message: 'Services are built once in src/services.ts and passed in through constructors.',
        },
      ],
    },
  },
  {
    // Tests read JSON answers whose shape the assertions check; typing each one adds noise, not safety.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
  },
);

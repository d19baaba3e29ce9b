// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "dist-sandbox/", "coverage/", "node_modules/", "data/", "test-results/"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "no-console": "error",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    // The page's script and the module only it uses: their own program, with the browser's
    // types (tsconfig.ui.json).
    files: ["sandbox/ui/page.ts", "sandbox/ui/form-state.ts"],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: "./tsconfig.ui.json",
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    // The layer rule (README, "Layout"): the product in src/ never imports the sandbox, its
    // simulators or the tests; sandbox/ may import src/; test/ and bench/ may import both.
    files: ["src/**/*.ts"],
    rules: {
      // A file a reader takes in whole, a function that fits on a screen (README, "Layout").
      "max-lines": ["error", { max: 400 }],
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["../sandbox/*", "**/sandbox/**", "**/test/**", "**/bench/**"],
              message:
                "src/ is the product alone: it may not import the sandbox, its simulators, the tests or the benchmarks.",
            },
          ],
        },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "ImportExpression[source.value=/(^|\\/)(sandbox|test|bench)\\//]",
          message:
            "src/ is the product alone: it may not import the sandbox, its simulators, the tests or the benchmarks.",
        },
      ],
    },
  },
  {
    files: ["test/**/*.ts", "bench/**/*.ts"],
    rules: {
      "no-console": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  {
    files: ["eslint.config.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);

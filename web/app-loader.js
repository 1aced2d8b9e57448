// Starts the UI's wasm without an inline script, so the page's
// Content-Security-Policy can say `script-src 'self'`. Trunk's default loader
// is an inline <script type="module">; Trunk.toml's `pattern_script` replaces
// it with two <meta> tags naming the hashed JS glue and wasm, and Trunk copies
// this file with a hashed name and an integrity attribute. The glue itself was
// already fetched and integrity-checked by Trunk's <link rel="modulepreload">.
const named = (name) => {
  const url = document.querySelector(`meta[name="${name}"]`)?.content;
  if (!url) throw new Error(`app-loader: <meta name="${name}"> is missing (check Trunk.toml's pattern_script)`);
  return url;
};
const { default: init } = await import(named("tinygpt-ui-js"));
const wasm = await init({ module_or_path: named("tinygpt-ui-wasm") });
dispatchEvent(new CustomEvent("TrunkApplicationStarted", { detail: { wasm } }));

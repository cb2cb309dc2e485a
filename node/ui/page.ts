// The page every content level serves (papers 000/002): level 3 full (styles, the logo, the
// chart), 2 light (styles, no chart or images), 1 text only. Pure; the build writes it next to
// that level's bundle (deploy/site-bundle.ts).
import { CONTENT_LEVELS } from '../../shared/content-levels.ts';

export function indexHtml(level: number): string {
  if (!Number.isInteger(level) || level < 1 || level > CONTENT_LEVELS) throw new Error(`invariant: content level ${level}`);
  const at = (min: number, html: string) => (level >= min ? html : '');
  return `<!doctype html>
<html lang="en" data-level="${level}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ews</title>
<link rel="icon" href="data:,">
${at(2, '<link rel="stylesheet" href="style.css">')}
<script src="app.js" defer></script>
</head>
<body>
<header>
  ${at(3, '<img src="logo.svg" alt="" width="28" height="28">')}
  <h1>ews <span id="cluster-name"></span></h1>
  <span id="who"></span>
  <button id="logout" type="button" hidden>Log out</button>
</header>
<div id="banner" role="status" hidden></div>
<section id="login" hidden>
  <h2>Log in</h2>
  <form id="login-form">
    <label>Name <input name="name" autocomplete="username" required maxlength="128"></label>
    <label>Password <input name="password" type="password" autocomplete="current-password" required maxlength="1024"></label>
    <button type="submit">Log in</button>
    <p id="login-error" role="alert"></p>
  </form>
</section>
<main id="app" hidden>
  <section id="alarms">
    <h2>Alarms <span id="alarm-count"></span></h2>
    <ul id="alarm-list"><li>Loading…</li></ul>
  </section>
  <section id="devices">
    <h2>Devices</h2>
    <div id="device-list"><p>Loading…</p></div>
  </section>
  <section id="cluster">
    <h2>Boards</h2>
    <div id="upgrade" hidden></div>
    <div class="scroll">
    <table id="board-table">
      <thead><tr><th>Board</th><th>State</th><th>CPU</th><th>Memory</th><th>Up</th><th>Temp</th><th>Version</th></tr></thead>
      <tbody></tbody>
    </table>
    </div>
    <details id="cluster-details">
      <summary>Cluster details</summary>
      <p id="cluster-summary">…</p>
      <table id="cluster-table">
        <thead><tr><th>Board</th><th>Role</th><th>linknum</th><th>runstate</th></tr></thead>
        <tbody></tbody>
      </table>
      <p id="qos"></p>
      ${at(
        3,
        `<h3>Requests per second and queue length</h3>
      <canvas id="chart" width="640" height="180" aria-label="requests per class and queue length over the last minutes"></canvas>
      <p id="chart-legend"></p>`,
      )}
    </details>
  </section>
  <section id="events">
    <h2>Events</h2>
    <ol id="log-list" reversed></ol>
  </section>
</main>
<footer>content level ${level} · view: <a href="/?level=1">text</a> · <a href="/?level=2">light</a> · <a href="/?level=3">full</a></footer>
</body>
</html>
`;
}

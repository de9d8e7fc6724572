// Opens a profile of tests/workloads/ratio.py in speedscope, in a real
// (headless) Chromium driven by playwright-core, the way a user would:
// speedscope's built app and the profile are served from one localhost
// origin and the profile is loaded with #profileURL=. Then the Sandwich
// tab: its table must list leaf, heavy, light, main and <module> with
// leaf the heaviest in self time and heavy above light in total time.
// Saves a screenshot of the view. Exit status 0 pass, 1 fail.
//
//   node speedscope_test.js --profile P.pb.gz --node-dir tests/node
//        [--chromium /usr/bin/chromium] [--screenshot out.png] [--workload ratio.py]
'use strict';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

function parseArgs(argv) {
  const a = { chromium: '/usr/bin/chromium', timeout: 60000 };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    a[k] = argv[i + 1];
  }
  for (const k of ['profile', 'nodeDir']) {
    if (!a[k]) throw new Error('missing --' + k);
  }
  a.timeout = Number(a.timeout);
  return a;
}

const args = parseArgs(process.argv);
const { chromium } = require(path.resolve(args.nodeDir, 'node_modules', 'playwright-core'));
const release = path.resolve(args.nodeDir, 'node_modules', 'speedscope', 'dist', 'release');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
  '.png': 'image/png', '.ico': 'image/x-icon', '.wasm': 'application/wasm',
  '.woff2': 'font/woff2', '.json': 'application/json', '.txt': 'text/plain' };

const errors = [];
function expect(cond, msg) {
  if (!cond) {
    console.log('error: ' + msg);
    errors.push(msg);
  }
  return cond;
}

// A static server for speedscope's files under /speedscope/ and the
// profile at /profile.pb.gz (sent as stored: gzip bytes, no Content-Encoding).
function serve() {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    let file = null;
    if (u.pathname === '/profile.pb.gz') {
      file = args.profile;
    } else if (u.pathname.startsWith('/speedscope/')) {
      const rel = path.normalize(decodeURIComponent(u.pathname.slice('/speedscope/'.length)) || 'index.html');
      if (!rel.startsWith('..')) file = path.join(release, rel);
    }
    if (!file) {
      res.writeHead(404);
      res.end();
      return;
    }
    fs.readFile(file, (err, data) => {
      if (err) {
        res.writeHead(404);
        res.end();
        return;
      }
      res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
      res.end(data);
    });
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

// Reads the Sandwich table: [{name, file, total, self, totalPct, selfPct}]
// in display order; the percentages are the width of each cell's bar.
async function sandwichRows(page) {
  return page.$$eval('tr', trs => trs.map(tr => {
    const td = tr.querySelectorAll('td');
    if (td.length !== 3) return null;
    const pct = cell => {
      const bar = cell.querySelector('div > div[style*="width"]');
      return bar ? parseFloat(bar.style.width) : NaN;
    };
    return {
      name: td[2].textContent.trim(), file: td[2].getAttribute('title') || '',
      total: td[0].textContent.trim(), self: td[1].textContent.trim(),
      totalPct: pct(td[0]), selfPct: pct(td[1]),
    };
  }).filter(r => r));
}

function byName(rows) {
  const m = {};
  for (const r of rows) m[r.name] = r;
  return m;
}

async function main() {
  const server = await serve();
  const port = server.address().port;
  const origin = `http://127.0.0.1:${port}`;
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speedscope-chromium-'));
  let context = null;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: args.chromium,
      headless: true,
      viewport: { width: 1280, height: 720 },
      timeout: args.timeout,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context.setDefaultTimeout(args.timeout / 2);
    // Nothing but our origin: speedscope must not need the network.
    await context.route(url => !url.href.startsWith(origin + '/'), route => {
      console.log('blocked request to ' + route.request().url());
      route.abort();
    });
    const page = context.pages()[0] || await context.newPage();
    const dialogs = [];
    page.on('dialog', d => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    page.on('pageerror', e => errors.push('page error: ' + e.message));
    page.on('console', m => { if (/import|error/i.test(m.text())) console.log('speedscope console: ' + m.text()); });

    const url = `${origin}/speedscope/index.html#profileURL=${encodeURIComponent(origin + '/profile.pb.gz')}`;
    console.log('opening ' + url);
    await page.goto(url);
    // Loaded when the title names the file and the view tabs are there.
    try {
      await page.waitForFunction(() => document.title.startsWith('profile.pb.gz'), null,
        { timeout: args.timeout / 2 });
    } catch (e) {
      expect(false, `speedscope did not load the profile (title ${JSON.stringify(await page.title())}, ` +
        `dialogs ${JSON.stringify(dialogs)})`);
      return;
    }
    await page.getByText(/^\W*Sandwich$/).click();
    try {
      await page.waitForSelector('td[title]', { timeout: args.timeout / 4 });
    } catch (e) {
      expect(false, 'the Sandwich table shows no rows');
      await page.screenshot({ path: args.screenshot || path.join(os.tmpdir(), 'speedscope-empty.png') });
      return;
    }
    let rows = await sandwichRows(page);
    console.log('Sandwich table, as shown (sorted by self):');
    for (const r of rows) {
      console.log(`  ${r.total.padEnd(18)} ${r.self.padEnd(18)} ${r.name}  [${r.file}]`);
    }
    const m = byName(rows);
    for (const fn of ['leaf', 'heavy', 'light', 'main', '<module>']) {
      expect(m[fn], `no ${fn} row in the Sandwich table`);
    }
    if (m.leaf && m.heavy && m.light && m.main && m['<module>']) {
      expect(rows[0].name === 'leaf', `first row by self time is ${rows[0].name}, not leaf`);
      expect(m.leaf.selfPct >= 80, `leaf self ${m.leaf.selfPct}% is under 80%`);
      expect(m.heavy.totalPct > m.light.totalPct,
        `heavy total ${m.heavy.totalPct}% is not above light total ${m.light.totalPct}%`);
      const ratio = m.heavy.totalPct / m.light.totalPct; // its accuracy is the e2e tests' job
      for (const fn of ['main', '<module>']) {
        expect(m[fn].totalPct >= 99, `${fn} total ${m[fn].totalPct}% is not ~100%`);
      }
      for (let i = 1; i < rows.length; i++) {
        expect(rows[i - 1].selfPct >= rows[i].selfPct, `rows not sorted by self at ${rows[i].name}`);
      }
      if (args.workload) {
        for (const fn of ['leaf', 'heavy', 'light', 'main']) {
          expect(m[fn].file === args.workload, `${fn} file is ${m[fn].file}, not ${args.workload}`);
        }
      }
      console.log(`leaf self ${m.leaf.selfPct}%, heavy total ${m.heavy.totalPct}%, ` +
        `light total ${m.light.totalPct}% (heavy/light ${ratio.toFixed(2)})`);

      // Sort by total (click the header): heavy must come before light.
      await page.locator('th', { hasText: 'Total' }).click();
      rows = await sandwichRows(page);
      const order = rows.map(r => r.name);
      console.log('sorted by total: ' + order.join(', '));
      expect(order.indexOf('heavy') >= 0 && order.indexOf('heavy') < order.indexOf('light'),
        'sorted by total, heavy is not above light');

      // Select leaf: the callers flame graph appears beside the table.
      await page.locator('td[title]', { hasText: /^leaf$/ }).click();
      await page.waitForTimeout(500);
    }
    if (args.screenshot) {
      fs.mkdirSync(path.dirname(args.screenshot), { recursive: true });
      await page.screenshot({ path: args.screenshot });
      console.log('screenshot: ' + args.screenshot);
    }
    expect(dialogs.length === 0, 'speedscope showed dialogs: ' + JSON.stringify(dialogs));
  } finally {
    if (context) await context.close();
    server.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

const watchdog = setTimeout(() => {
  console.log('error: speedscope test timed out');
  process.exit(1);
}, args.timeout * 2);
main().then(() => {
  clearTimeout(watchdog);
  for (const e of errors) if (e.startsWith('page error')) console.log('error: ' + e);
  console.log(errors.length ? `${errors.length} speedscope checks failed` : 'all speedscope checks passed');
  process.exit(errors.length ? 1 : 0);
}, e => {
  clearTimeout(watchdog);
  console.log('error: ' + (e && e.stack || e));
  process.exit(1);
});

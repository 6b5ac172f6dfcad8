// Drives an MCP App end to end in a real browser: serves host.html (and
// host.js, bundled with esbuild) on 127.0.0.1 with the MCP endpoint proxied
// under the same origin at /mcp, opens it in headless Chromium
// (playwright-core), which calls the chart tool and renders its App; then
// reads the values the App shows, clicks its "Sort" button and reads them
// again. Prints a JSON report as the last line of stdout:
//
//   {"title": "...", "before": [..], "after": [..], "status": "...",
//    "mcp": ["tools/call chart_numbers", ...], "hostLog": "...", "pageErrors": [..],
//    "screenshot": "PATH"}
//
// `before` and `after` are the values the App lists before and after "Sort",
// `status` what it says after, `mcp` the JSON-RPC requests the page sent to
// the server, in order, and `pageErrors` what the page and the App logged as
// errors (a CSP violation among them).
// Exits non-zero, with what the page logged, when a step fails or times out.
//
// Usage: node drive.mjs --node-modules DIR --url http://HOST:PORT/mcp
//                       --tool NAME --arguments JSON --screenshot PATH
//                       [--browser PATH] [--timeout-ms N]
//
// --node-modules: the packages of package.json, installed by
// scripts/npm-packages tests/browser. --browser: the Chromium to run (default:
// `chromium` on PATH, Debian's package). --timeout-ms: the bound on each wait
// (default 30000); the run as a whole stops after four of them.
import { createServer, request as httpRequest } from 'node:http';
import { accessSync, constants, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function fail(message) {
    process.stderr.write(`tests/browser/drive.mjs: ${message}\n`);
    process.exit(1);
}

function parseArgs(argv) {
    const opts = { timeoutMs: 30000 };
    const names = {
        '--node-modules': 'nodeModules', '--url': 'url', '--tool': 'tool', '--arguments': 'arguments',
        '--screenshot': 'screenshot', '--browser': 'browser', '--timeout-ms': 'timeoutMs'
    };
    for (let i = 0; i < argv.length; i += 2) {
        const name = names[argv[i]];
        if (!name || argv[i + 1] === undefined) fail(`unknown option or missing value: ${argv[i]}`);
        opts[name] = name === 'timeoutMs' ? Number(argv[i + 1]) : argv[i + 1];
    }
    for (const required of ['nodeModules', 'url', 'tool', 'arguments', 'screenshot']) {
        if (!opts[required]) fail(`--${required.replace(/[A-Z]/g, c => `-${c.toLowerCase()}`)} is required`);
    }
    return opts;
}

/** The first executable `name` on PATH. */
function onPath(name) {
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
        try {
            accessSync(join(dir, name), constants.X_OK);
            return join(dir, name);
        } catch {}
    }
    fail(`no '${name}' on PATH (Debian: apt-get install chromium)`);
}

/** host.js and its packages as one browser script. */
async function bundle(nodeModules) {
    const esbuild = createRequire(join(nodeModules, 'package.json'))('esbuild');
    const built = await esbuild.build({
        entryPoints: [join(here, 'host.js')],
        nodePaths: [nodeModules],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        write: false,
        logLevel: 'error'
    });
    return built.outputFiles[0].text;
}

/**
 * Serves the host page and its script, and passes /mcp through to `upstream`
 * as it is (streams included), recording each JSON-RPC request's method (and
 * tool name) in `mcp`. Resolves to the server's origin.
 */
function serve(script, upstream, mcp) {
    const files = {
        '/': ['text/html; charset=utf-8', readFileSync(join(here, 'host.html'))],
        '/host.js': ['text/javascript; charset=utf-8', script]
    };
    const server = createServer((req, res) => {
        const path = new URL(req.url, 'http://x').pathname;
        if (path === '/mcp') {
            const chunks = [];
            req.on('data', chunk => chunks.push(chunk));
            req.on('end', () => {
                const body = Buffer.concat(chunks);
                try {
                    for (const m of [JSON.parse(body.toString() || 'null')].flat()) {
                        if (m?.method && m.id !== undefined) {
                            mcp.push(m.params?.name ? `${m.method} ${m.params.name}` : m.method);
                        }
                    }
                } catch {}
                const out = httpRequest(upstream, { method: req.method, headers: req.headers }, answer => {
                    res.writeHead(answer.statusCode, answer.headers);
                    answer.pipe(res);
                });
                out.on('error', error => {
                    if (!res.headersSent) res.writeHead(502);
                    res.end(String(error));
                });
                // A stream the page lets go of (a closed tab) ends upstream too.
                res.on('close', () => out.destroy());
                out.end(body);
            });
        } else if (files[path]) {
            res.writeHead(200, { 'content-type': files[path][0] }).end(files[path][1]);
        } else {
            res.writeHead(404).end();
        }
    });
    return new Promise(resolve => {
        server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${server.address().port}` }));
    });
}

/** The numbers the App lists in its <ol id="values">. */
async function shownValues(app) {
    const texts = await app.locator('#values li').allTextContents();
    return texts.map(Number);
}

async function main(opts) {
    const { chromium } = createRequire(join(opts.nodeModules, 'package.json'))('playwright-core');
    const mcp = [];
    const { server, origin } = await serve(await bundle(opts.nodeModules), opts.url, mcp);
    const browser = await chromium.launch({ executablePath: opts.browser ?? onPath('chromium') });
    const page = await browser.newPage({ viewport: { width: 600, height: 480 } });
    const pageErrors = [];
    page.on('pageerror', error => pageErrors.push(String(error)));
    page.on('console', message => {
        if (message.type() === 'error') pageErrors.push(message.text());
    });
    const hostLog = () => page.locator('#log').textContent().catch(() => '(no page)');
    const step = async (what, action) => {
        try {
            return await action();
        } catch (error) {
            mkdirSync(dirname(opts.screenshot), { recursive: true });
            await page.screenshot({ path: opts.screenshot }).catch(() => {});
            fail(`${what}: ${error.message}\n-- host page log --\n${await hostLog()}\n` +
                `-- page errors --\n${pageErrors.join('\n')}\n-- requests to the server --\n${mcp.join('\n')}\n` +
                `screenshot: ${opts.screenshot}`);
        }
    };
    const timeout = opts.timeoutMs;

    const query = new URLSearchParams({ tool: opts.tool, arguments: opts.arguments });
    await step('open the host page', () => page.goto(`${origin}/?${query}`, { timeout }));
    await step('the App initializes (ui/initialize) and the host sends it the tool result', async () => {
        await page.waitForFunction(() => ['result-sent', 'failed'].includes(window.host?.state), null, { timeout });
        const host = await page.evaluate(() => window.host);
        if (host.state === 'failed') throw new Error(host.error);
    });

    const app = page.frameLocator('#app-frame');
    const expected = JSON.parse(opts.arguments).values;
    await step(`the App lists the ${expected.length} values`, () =>
        app.locator('#values li').nth(expected.length - 1).waitFor({ timeout }));
    const title = await app.locator('#title').textContent();
    const before = await shownValues(app);

    await step('click "Sort" in the App', () => app.locator('#sort').click({ timeout }));
    const sortCalls = () => mcp.filter(m => m.endsWith(' sort_numbers')).length;
    await step('the App calls sort_numbers and shows its answer', async () => {
        const deadline = Date.now() + timeout;
        while (sortCalls() === 0 || !(await app.locator('#sort').isEnabled())) {
            if (Date.now() > deadline) throw new Error(`not within ${timeout} ms`);
            await new Promise(resolve => setTimeout(resolve, 50));
        }
    });
    const after = await shownValues(app);
    const status = await app.locator('#status').textContent();

    mkdirSync(dirname(opts.screenshot), { recursive: true });
    await page.screenshot({ path: opts.screenshot });
    const report = { title, before, after, status, mcp, hostLog: await hostLog(), pageErrors, screenshot: opts.screenshot };
    await browser.close();
    server.closeAllConnections();
    server.close();
    process.stdout.write(`${JSON.stringify(report)}\n`);
}

const opts = parseArgs(process.argv.slice(2));
const watchdog = setTimeout(() => fail(`the run took longer than ${4 * opts.timeoutMs} ms`), 4 * opts.timeoutMs);
main(opts).then(() => clearTimeout(watchdog), error => fail(error?.stack ?? String(error)));

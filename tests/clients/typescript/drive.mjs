// Drives one of Airlock's sample tools to completion with the official
// TypeScript MCP SDK client (@modelcontextprotocol/client, pinned in
// package.json), and prints one JSON line describing the run.
//
// Usage:
//   node drive.mjs --node-modules DIR --mode legacy|pinned --flow FLOW
//                  (--url http://127.0.0.1:PORT/mcp | --stdio -- COMMAND [ARGS...])
//                  [--timeout-ms N] [--trace]
//
//   --node-modules DIR  where `setup` installed the SDK (its last line of
//                       output); defaults to the first entry of NODE_PATH
//   --mode legacy       the classic `initialize` handshake and session
//                       (2025-11-25); the server asks with requests of its own
//   --mode pinned       versionNegotiation { mode: { pin: '2026-07-28' } }:
//                       stateless, the server answers `input_required` and the
//                       client answers and retries (multi round-trip requests)
//   --flow FLOW         work-items | deploy | summarize | workspace
//   --url URL           Streamable HTTP endpoint
//   --stdio -- CMD...   spawn CMD as a stdio server (everything after `--`)
//   --timeout-ms N      give up after N ms in all (default 30000)
//   --trace             log every message and HTTP exchange to stderr
//
// Every input request (elicitation, sampling, roots) is answered by the
// client's own handlers with the fixed answers below, so the caller can
// check that the final result used them. Output, on one line:
//   {"flow", "mode", "transport", "protocolVersion", "era", "server",
//    "inputs": [{method, params}], "sent": [method | "response"],
//    "http": ["POST initialize 200 application/json", ...], "result": {...}}
// Exit status: 0 when the tool call completed (the result may still be an
// error result: the caller judges it), 1 on any failure, 2 on bad usage.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The revision the pinned mode asks for. */
const PINNED_REVISION = '2026-07-28';

/** Answers the handlers give; the caller asserts they reach the result. */
const ANSWERS = {
    resolution: 'Duplicate',
    duplicateOf: 1717,
    model: 'typescript-sdk-test-model',
    summaryPrefix: 'Summary from the TypeScript client',
    roots: [
        { uri: 'file:///srv/airlock-e2e/app', name: 'App' },
        { uri: 'file:///srv/airlock-e2e/notes.md' }
    ]
};

/**
 * Each flow: the tool call to make, and how to answer each kind of input
 * request. A request a flow does not expect fails its handler, so the run
 * fails loudly instead of looping.
 */
const FLOWS = {
    'work-items': {
        call: { name: 'update_work_item', arguments: { workItemId: 42, fields: { State: 'Resolved' } } },
        elicit(params) {
            const asked = Object.keys(params.requestedSchema?.properties ?? {});
            if (asked.includes('resolution')) {
                return { action: 'accept', content: { resolution: ANSWERS.resolution } };
            }
            if (asked.includes('duplicateOf')) {
                return { action: 'accept', content: { duplicateOf: ANSWERS.duplicateOf } };
            }
            throw new Error(`unexpected form with fields ${JSON.stringify(asked)}`);
        }
    },
    deploy: {
        call: { name: 'deploy', arguments: { service: 'billing', environment: 'production' } },
        elicit(params) {
            if (!params.requestedSchema?.properties?.ok) {
                throw new Error(`unexpected form: ${JSON.stringify(params.requestedSchema)}`);
            }
            return { action: 'accept', content: { ok: true } };
        }
    },
    summarize: {
        call: {
            name: 'summarize',
            arguments: { text: 'Airlock runs MCP tools written as WebAssembly components, safely and statelessly.' }
        },
        sample(params) {
            // Echo how much the handler was given, so the result shows the
            // request really reached it.
            const words = params.messages
                .flatMap(m => (Array.isArray(m.content) ? m.content : [m.content]))
                .filter(c => c.type === 'text')
                .map(c => c.text)
                .join(' ')
                .split(/\s+/)
                .filter(Boolean).length;
            return {
                model: ANSWERS.model,
                role: 'assistant',
                content: { type: 'text', text: `${ANSWERS.summaryPrefix} (${words} words in).` }
            };
        }
    },
    workspace: {
        call: { name: 'list_roots', arguments: {} },
        roots() {
            return { roots: ANSWERS.roots };
        }
    }
};

/** Prints `message` and exits with `code`. */
function fail(message, code = 1) {
    process.stderr.write(`drive.mjs: ${message}\n`);
    process.exit(code);
}

/** Parses the command line (see the header). */
function parseArgs(argv) {
    const opts = { timeoutMs: 30000, trace: false, nodeModules: process.env.NODE_PATH?.split(':')[0] };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) fail(`${arg} needs a value`, 2);
            return argv[++i];
        };
        switch (arg) {
            case '--node-modules': opts.nodeModules = value(); break;
            case '--mode': opts.mode = value(); break;
            case '--flow': opts.flow = value(); break;
            case '--url': opts.url = value(); break;
            case '--timeout-ms': opts.timeoutMs = Number(value()); break;
            case '--trace': opts.trace = true; break;
            case '--stdio': break;
            case '--':
                opts.command = argv.slice(i + 1);
                i = argv.length;
                break;
            default: fail(`unknown argument '${arg}'`, 2);
        }
    }
    if (!['legacy', 'pinned'].includes(opts.mode)) fail('--mode must be legacy or pinned', 2);
    if (!FLOWS[opts.flow]) fail(`--flow must be one of ${Object.keys(FLOWS).join(', ')}`, 2);
    if (!opts.url === !opts.command?.length) fail('give either --url URL or --stdio -- COMMAND...', 2);
    if (!opts.nodeModules) fail('give --node-modules DIR (the last line `setup` prints) or NODE_PATH', 2);
    if (!(opts.timeoutMs > 0)) fail('--timeout-ms must be a positive number', 2);
    return opts;
}

/**
 * Imports an ES module entry point of package `name` from `nodeModules`, as
 * its package.json `exports` name it (ESM import ignores NODE_PATH).
 */
async function importFrom(nodeModules, name, subpath = '.') {
    const dir = join(nodeModules, ...name.split('/'));
    let manifest;
    try {
        manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    } catch (error) {
        fail(`cannot read ${name} from ${nodeModules} (run tests/clients/typescript/setup): ${error.message}`);
    }
    const entry = manifest.exports?.[subpath]?.import;
    const file = typeof entry === 'string' ? entry : entry?.default;
    if (!file) fail(`${name}@${manifest.version} exports no ES module at '${subpath}'`);
    return import(pathToFileURL(join(dir, file)).href);
}

/** A one-line description of a JSON-RPC message (or batch) for the logs. */
function describe(message) {
    if (Array.isArray(message)) return `[${message.map(describe).join(', ')}]`;
    if (message?.method) return message.method;
    if (message && 'id' in message) return message.error ? 'error response' : 'response';
    return 'unknown';
}

/** A fetch that records each exchange (method, JSON-RPC method, status, type). */
function recordingFetch(log, trace) {
    return async (url, init = {}) => {
        let what = init.method ?? 'GET';
        if (typeof init.body === 'string') {
            try {
                what += ` ${describe(JSON.parse(init.body))}`;
            } catch {
                what += ' (unparsed body)';
            }
        }
        if (trace) {
            const headers = Object.fromEntries(new Headers(init.headers).entries());
            process.stderr.write(`> ${what} ${JSON.stringify(headers)}\n`);
        }
        const response = await fetch(url, init);
        const type = (response.headers.get('content-type') ?? '').split(';')[0];
        log.push(`${what} ${response.status}${type ? ` ${type}` : ''}`);
        if (trace) {
            const headers = Object.fromEntries(response.headers.entries());
            process.stderr.write(`< ${what} ${response.status} ${JSON.stringify(headers)}\n`);
        }
        return response;
    };
}

/** Records (and with --trace logs) every message `transport` sends and receives. */
function recordMessages(transport, sent, trace) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        sent.push(describe(message));
        if (trace) process.stderr.write(`>> ${JSON.stringify(message)}\n`);
        return send(message, options);
    };
    if (trace) {
        let onmessage;
        Object.defineProperty(transport, 'onmessage', {
            configurable: true,
            get: () => onmessage,
            set: handler => {
                onmessage = handler && ((message, extra) => {
                    process.stderr.write(`<< ${JSON.stringify(message)}\n`);
                    return handler(message, extra);
                });
            }
        });
    }
}

/** Runs one flow and returns what the output line reports. */
async function run(opts) {
    const { Client, StreamableHTTPClientTransport } = await importFrom(opts.nodeModules, '@modelcontextprotocol/client');
    const flow = FLOWS[opts.flow];

    const client = new Client(
        { name: 'airlock-e2e-typescript', version: '1.0.0' },
        {
            capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
            versionNegotiation: { mode: opts.mode === 'pinned' ? { pin: PINNED_REVISION } : 'legacy' }
        }
    );

    const inputs = [];
    /** Registers a handler that records the request, then answers with `answer`. */
    const handle = (method, answer) => {
        client.setRequestHandler(method, async request => {
            inputs.push({ method, params: request.params });
            if (!answer) throw new Error(`flow ${opts.flow} did not expect ${method}`);
            return answer(request.params);
        });
    };
    handle('elicitation/create', flow.elicit);
    handle('sampling/createMessage', flow.sample);
    handle('roots/list', flow.roots);

    const http = [];
    const sent = [];
    let transport;
    if (opts.url) {
        transport = new StreamableHTTPClientTransport(new URL(opts.url), {
            fetch: recordingFetch(http, opts.trace)
        });
    } else {
        const { StdioClientTransport } = await importFrom(opts.nodeModules, '@modelcontextprotocol/client', './stdio');
        const [command, ...args] = opts.command;
        transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
    }
    recordMessages(transport, sent, opts.trace);

    const errors = [];
    client.onerror = error => {
        errors.push(error);
        if (opts.trace) process.stderr.write(`client error: ${error?.stack ?? error}\n`);
    };

    try {
        await client.connect(transport);
    } catch (error) {
        throw new Error(`connect failed: ${explain(error)}`);
    }
    const protocolVersion = client.getNegotiatedProtocolVersion();
    const era = client.getProtocolEra();
    const server = client.getServerVersion();

    let result;
    try {
        result = await client.callTool(flow.call, { timeout: opts.timeoutMs });
    } catch (error) {
        const seen = inputs.map(i => i.method).join(', ') || 'none';
        throw new Error(`tools/call ${flow.call.name} failed (input requests answered: ${seen}): ${explain(error)}`);
    }

    // A legacy HTTP session ends with DELETE (the SDK only sends it when
    // asked; a 405 counts as done).
    if (opts.url && transport.sessionId) {
        await transport.terminateSession();
    }
    await client.close();

    return {
        flow: opts.flow,
        mode: opts.mode,
        transport: opts.url ? 'http' : 'stdio',
        protocolVersion,
        era,
        server,
        inputs,
        sent,
        http,
        result
    };
}

/** An error's message with its code, data and causes, when it has them. */
function explain(error) {
    if (!(error instanceof Error)) return String(error);
    const parts = [error.message];
    if (error.code !== undefined) parts.push(`code ${error.code}`);
    if (error.data !== undefined) parts.push(`data ${JSON.stringify(error.data)}`);
    const cause = error.cause ?? error.data?.cause;
    if (cause instanceof Error) parts.push(`caused by: ${explain(cause)}`);
    return parts.join('; ');
}

const opts = parseArgs(process.argv.slice(2));
const where = opts.url ?? `stdio (${opts.command.join(' ')})`;
const timer = setTimeout(
    () => fail(`${opts.flow} (${opts.mode}) against ${where}: no result within ${opts.timeoutMs} ms`),
    opts.timeoutMs
);
try {
    const report = await run(opts);
    clearTimeout(timer);
    process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
} catch (error) {
    fail(`${opts.flow} (${opts.mode}) against ${where}: ${explain(error)}`);
}

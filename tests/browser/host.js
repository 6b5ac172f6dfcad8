// An MCP Apps host page: connects to the MCP server at ./mcp (same origin),
// calls the tool named by the query (`?tool=NAME&arguments=JSON`), reads the
// `ui://` resource its `_meta.ui.resourceUri` names, renders it in a
// sandboxed iframe (`allow-scripts` only: an opaque origin) under the CSP its
// `_meta.ui.csp` asks for, and joins the two with the official AppBridge: the
// App's `tools/call` requests go to the server, and the tool's input and
// result go to the App once it has initialized. Bundled for the browser by
// drive.mjs. Progress and errors are appended to <pre id="log">; `window.host`
// holds the state drive.mjs waits on.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
    AppBridge,
    PostMessageTransport,
    RESOURCE_MIME_TYPE,
    getToolUiResourceUri
} from '@modelcontextprotocol/ext-apps/app-bridge';

const EXTENSION = 'io.modelcontextprotocol/ui';

window.host = { state: 'starting', error: null };

function log(line) {
    document.getElementById('log').textContent += `${line}\n`;
}

/**
 * The Content-Security-Policy of an App from its resource's `_meta.ui.csp`:
 * nothing beyond inline script and style and data: images, plus the origins
 * the resource names for connections and for scripts, styles, images, fonts.
 */
function contentSecurityPolicy(csp = {}) {
    const connect = (csp.connectDomains ?? []).join(' ');
    const resources = (csp.resourceDomains ?? []).join(' ');
    return [
        "default-src 'none'",
        `script-src 'unsafe-inline' ${resources}`,
        `style-src 'unsafe-inline' ${resources}`,
        `img-src data: ${resources}`,
        `font-src data: ${resources}`,
        `connect-src ${connect || "'none'"}`
    ].join('; ');
}

/** `html` with a CSP meta element first in its document. */
function withPolicy(html, policy) {
    const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replaceAll('"', '&quot;')}">`;
    return /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, match => match + meta) : meta + html;
}

async function main() {
    const query = new URLSearchParams(location.search);
    const toolName = query.get('tool');
    const toolArguments = JSON.parse(query.get('arguments') ?? '{}');

    const client = new Client(
        { name: 'airlock-apps-test-host', version: '1.0.0' },
        { capabilities: { extensions: { [EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } }
    );
    await client.connect(new StreamableHTTPClientTransport(new URL('mcp', location.href)));
    log(`connected to ${client.getServerVersion()?.name}`);

    const { tools } = await client.listTools();
    const tool = tools.find(t => t.name === toolName);
    if (!tool) throw new Error(`the server lists no tool ${toolName}`);
    const uri = getToolUiResourceUri(tool);
    if (!uri) throw new Error(`${toolName} names no UI resource (_meta.ui.resourceUri)`);

    const result = await client.callTool({ name: toolName, arguments: toolArguments });
    log(`called ${toolName}: ${JSON.stringify(result.structuredContent)}`);

    const { contents } = await client.readResource({ uri });
    const content = contents.find(c => c.uri === uri) ?? contents[0];
    if (content?.mimeType !== RESOURCE_MIME_TYPE) {
        throw new Error(`${uri} is ${content?.mimeType}, not ${RESOURCE_MIME_TYPE}`);
    }
    const html = content.text ?? new TextDecoder().decode(Uint8Array.from(atob(content.blob), c => c.charCodeAt(0)));
    log(`read ${uri} (${html.length} characters)`);

    // The frame exists (about:blank) before the App loads, so the bridge
    // listens to its window before the App's first message.
    const frame = document.createElement('iframe');
    frame.id = 'app-frame';
    frame.title = uri;
    frame.setAttribute('sandbox', 'allow-scripts');
    document.getElementById('app').append(frame);

    const bridge = new AppBridge(
        client,
        { name: 'airlock-apps-test-host', version: '1.0.0' },
        { serverTools: {}, logging: {} }
    );
    bridge.oninitialized = async () => {
        log(`the App initialized: ${JSON.stringify(bridge.getAppVersion())}`);
        await bridge.sendToolInput({ arguments: toolArguments });
        await bridge.sendToolResult(result);
        window.host.state = 'result-sent';
    };
    await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
    frame.srcdoc = withPolicy(html, contentSecurityPolicy(content._meta?.ui?.csp));
    window.host.state = 'app-loading';
}

main().catch(error => {
    window.host.state = 'failed';
    window.host.error = String(error?.stack ?? error);
    log(`error: ${window.host.error}`);
});

#!/usr/bin/env node
// What pi 1.x sends a model for a session file: pi's SessionManager rebuilds the context,
// convertToLlm translates it, and pi-ai's own adapter for each API builds the request, whose
// body is caught by a fetch that never reaches the network.
//
//   node pi_request_oracle.mjs JOBS.json
//
// JOBS is a JSON array of {"file": F, "api": "anthropic-messages" | "openai-completions" |
// "openai-responses", "model": {...pi-ai model fields}}; one JSON line per job is printed:
// {"ok": true, "body": the request body pi's adapter built} or {"ok": false, "error": "..."}.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NODE_MODULES = process.env.PI_NODE_MODULES;
const PACKAGE = process.env.PI_PACKAGE || "@earendil-works/pi-coding-agent";
const scope = PACKAGE.split("/")[0];
const load = (pkg, rel) => import(pathToFileURL(path.join(NODE_MODULES, ...pkg.split("/"), "dist", rel)).href);
const { SessionManager } = await load(PACKAGE, "core/session-manager.js");
const { convertToLlm } = await load(PACKAGE, "core/messages.js");
const { normalizeContext } = await load(`${scope}/pi-ai`, "utils/transcript.js");
const API_MODULES = {
	"anthropic-messages": "api/anthropic-messages.js",
	"openai-completions": "api/openai-completions.js",
	"openai-responses": "api/openai-responses.js",
};

async function requestBody(job) {
	const sm = SessionManager.open(job.file, path.dirname(job.file));
	const messages = convertToLlm(sm.buildSessionContext().messages);
	const { stream } = await load(`${scope}/pi-ai`, API_MODULES[job.api]);
	let body;
	const fetch = async (_url, init) => {
		body = JSON.parse(typeof init.body === "string" ? init.body : new TextDecoder().decode(init.body));
		return new Response(JSON.stringify({ error: { message: "oracle: not sent" } }), {
			status: 400,
			headers: { "content-type": "application/json" },
		});
	};
	const events = stream(job.model, normalizeContext({ messages }), { apiKey: "sk-oracle", fetch, maxRetries: 0 });
	await events.result();
	if (body === undefined) throw new Error("the adapter made no request");
	return { body };
}

const jobs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
for (const job of jobs) {
	let line;
	try {
		line = JSON.stringify({ ok: true, ...(await requestBody(job)) });
	} catch (err) {
		line = JSON.stringify({ ok: false, error: String(err?.stack ?? err) });
	}
	process.stdout.write(`${line}\n`);
}

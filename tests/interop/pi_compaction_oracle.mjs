#!/usr/bin/env node
// pi's own compaction code, run on session files, for the differential tests in
// test_compaction_interop.py. Usage: node pi_compaction_oracle.mjs JOBS.json > RESULTS.json
//
// JOBS.json is a list of jobs; the output is a list of results in the same order. Long texts
// (serialized conversations, prompts) come back as {sha256, length} unless a job has fullText:
//   {op:"prepare", file, leaf?, keeps:[...], reserveTokens?, compact?, customInstructions?}
//       findCutPoint + prepareCompaction per keepRecentTokens (and, with compact, pi's compact()
//       through a capturing provider, so the exact summary requests and the result are returned)
//   {op:"estimate", file, leaf?}        estimateTokens per entry message, estimateContextTokens
//   {op:"branch", file, pairs:[[oldLeaf, target], ...], budget?, summarize?, customInstructions?, replaceInstructions?}
//       collectEntriesForBranchSummary + prepareBranchEntries (+ generateBranchSummary)
//   {op:"messages", messages:[...]}     estimateTokens, estimateContextTokens, serializeConversation(convertToLlm(...))
//   {op:"constants"}                    the exported prompt constants
//
// pi lives in $PI_NODE_MODULES (the run_node fixture sets it). v1 files get deterministic
// ids 00000001, 00000002, ... (crypto.randomUUID is replaced by a counter, reset per file),
// the sequence the Python side gives migrate(new_id=...). Files are opened from a temp copy:
// pi's SessionManager rewrites files it migrates.
import crypto from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

let counter = 0;
crypto.randomUUID = () => {
	counter++;
	return `${counter.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
};
syncBuiltinESMExports();

const NODE_MODULES = process.env.PI_NODE_MODULES;
if (!NODE_MODULES) {
	console.error("set PI_NODE_MODULES to the node_modules folder holding @mariozechner/pi-coding-agent");
	process.exit(2);
}
const AGENT = path.join(NODE_MODULES, "@mariozechner/pi-coding-agent/dist");
const AI = path.join(NODE_MODULES, "@mariozechner/pi-ai/dist");
const imp = (base, rel) => import(pathToFileURL(path.join(base, rel)).href);
const SM = await imp(AGENT, "core/session-manager.js");
const MSG = await imp(AGENT, "core/messages.js");
const COMP = await imp(AGENT, "core/compaction/compaction.js");
const BRANCH = await imp(AGENT, "core/compaction/branch-summarization.js");
const UTILS = await imp(AGENT, "core/compaction/utils.js");
const REGISTRY = await imp(AI, "api-registry.js");

const API = "pi-jupyter-oracle";
let captured = [];
function fakeStream(model, context, options) {
	const prompt = context.messages[0].content[0].text;
	captured.push({
		systemPrompt: context.systemPrompt,
		prompt,
		maxTokens: options?.maxTokens ?? null,
		reasoning: options?.reasoning ?? null,
	});
	// the reply is a pure function of the request, so the Python side can give the same one
	const digest = crypto.createHash("sha256").update(prompt, "utf8").digest("hex").slice(0, 12);
	const message = {
		role: "assistant",
		content: [{ type: "text", text: `summary:${digest}:${options?.maxTokens}` }],
		api: API,
		provider: "oracle",
		model: "oracle",
		usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop",
		timestamp: 0,
	};
	return { result: async () => message, [Symbol.asyncIterator]: async function* () {} };
}
REGISTRY.registerApiProvider({ api: API, stream: fakeStream, streamSimple: fakeStream }, "pi-jupyter-oracle");
const model = (contextWindow) => ({
	id: "oracle",
	name: "oracle",
	api: API,
	provider: "oracle",
	baseUrl: "http://127.0.0.1:9",
	reasoning: true,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow,
	maxTokens: 4096,
});

function openCopy(file) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-compaction-oracle-"));
	const dst = path.join(dir, path.basename(file));
	fs.copyFileSync(file, dst);
	counter = 0;
	const sm = SM.SessionManager.open(dst, dir);
	return { sm, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

const conv = (messages) => UTILS.serializeConversation(MSG.convertToLlm(messages));
// long texts come back as a digest unless the job asks for them (fullText: true)
const sha = (text) => crypto.createHash("sha256").update(text, "utf8").digest("hex");
const textOut = (job, text) => (job.fullText ? text : { sha256: sha(text), length: text.length });
const fileLists = (ops) => UTILS.computeFileLists(ops);

function boundary(pathEntries) {
	let prev = -1;
	for (let i = pathEntries.length - 1; i >= 0; i--) {
		if (pathEntries[i].type === "compaction") {
			prev = i;
			break;
		}
	}
	let start = 0;
	if (prev >= 0) {
		const fk = pathEntries.findIndex((e) => e.id === pathEntries[prev].firstKeptEntryId);
		start = fk >= 0 ? fk : prev + 1;
	}
	return { prev, start };
}

async function prepareJob(job) {
	const { sm, cleanup } = openCopy(job.file);
	try {
		const leaf = job.leaf ?? sm.getLeafId();
		const pathEntries = sm.getBranch(leaf);
		const { prev, start } = boundary(pathEntries);
		const results = [];
		for (const keep of job.keeps) {
			const settings = { enabled: true, reserveTokens: job.reserveTokens ?? 16384, keepRecentTokens: keep };
			const cut = pathEntries.length ? COMP.findCutPoint(pathEntries, start, pathEntries.length, keep) : null;
			const prep = COMP.prepareCompaction(pathEntries, settings);
			const r = {
				keep,
				leaf,
				pathLength: pathEntries.length,
				boundaryStart: start,
				prevCompactionIndex: prev,
				cut,
				prepared: prep !== undefined,
			};
			if (prep) {
				r.preparation = {
					firstKeptEntryId: prep.firstKeptEntryId,
					isSplitTurn: prep.isSplitTurn,
					tokensBefore: prep.tokensBefore,
					messagesToSummarizeCount: prep.messagesToSummarize.length,
					turnPrefixMessagesCount: prep.turnPrefixMessages.length,
					historyText: textOut(job, conv(prep.messagesToSummarize)),
					turnPrefixText: textOut(job, conv(prep.turnPrefixMessages)),
					previousSummary: prep.previousSummary ?? null,
					fileLists: fileLists(prep.fileOps),
				};
				if (job.compact) {
					captured = [];
					const res = await COMP.compact(prep, model(200000), "key", undefined, job.customInstructions ?? undefined, undefined, "high");
					r.requests = captured.map((q) => ({ ...q, prompt: textOut(job, q.prompt) }));
					r.result = res;
				}
			}
			results.push(r);
		}
		return results;
	} finally {
		cleanup();
	}
}

function messageOfEntry(e) {
	switch (e.type) {
		case "message":
			return e.message;
		case "custom_message":
			return MSG.createCustomMessage(e.customType, e.content, e.display, e.details, e.timestamp);
		case "branch_summary":
			return MSG.createBranchSummaryMessage(e.summary, e.fromId, e.timestamp);
		case "compaction":
			return MSG.createCompactionSummaryMessage(e.summary, e.tokensBefore, e.timestamp);
		default:
			return undefined;
	}
}

function estimateJob(job) {
	const { sm, cleanup } = openCopy(job.file);
	try {
		const pathEntries = sm.getBranch(job.leaf ?? sm.getLeafId());
		const perEntry = [];
		for (const e of pathEntries) {
			const m = messageOfEntry(e);
			if (m) perEntry.push([e.id, COMP.estimateTokens(m)]);
		}
		const ctx = SM.buildSessionContext(pathEntries).messages;
		return { perEntry, context: COMP.estimateContextTokens(ctx), ids: pathEntries.map((e) => e.id) };
	} finally {
		cleanup();
	}
}

async function branchJob(job) {
	const { sm, cleanup } = openCopy(job.file);
	try {
		const out = [];
		for (const [oldLeaf, target] of job.pairs) {
			const { entries, commonAncestorId } = BRANCH.collectEntriesForBranchSummary(sm, oldLeaf, target);
			const prep = BRANCH.prepareBranchEntries(entries, job.budget ?? 0);
			const r = {
				oldLeaf,
				target,
				entryIds: entries.map((e) => e.id),
				commonAncestorId,
				messageCount: prep.messages.length,
				totalTokens: prep.totalTokens,
				text: textOut(job, conv(prep.messages)),
				fileLists: fileLists(prep.fileOps),
			};
			if (job.summarize) {
				captured = [];
				const window = job.contextWindow ?? 128000;
				r.summary = await BRANCH.generateBranchSummary(entries, {
					model: model(window),
					apiKey: "key",
					signal: new AbortController().signal,
					customInstructions: job.customInstructions ?? undefined,
					replaceInstructions: job.replaceInstructions ?? undefined,
					reserveTokens: job.reserveTokens ?? 16384,
				});
				r.requests = captured.map((q) => ({ ...q, prompt: textOut(job, q.prompt) }));
			}
			out.push(r);
		}
		return out;
	} finally {
		cleanup();
	}
}

function messagesJob(job) {
	const msgs = job.messages;
	return {
		estimates: msgs.map((m) => COMP.estimateTokens(m)),
		context: COMP.estimateContextTokens(msgs),
		llm: MSG.convertToLlm(msgs),
		serialized: conv(msgs),
	};
}

const jobs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const results = [];
for (const job of jobs) {
	switch (job.op) {
		case "prepare":
			results.push(await prepareJob(job));
			break;
		case "estimate":
			results.push(estimateJob(job));
			break;
		case "branch":
			results.push(await branchJob(job));
			break;
		case "messages":
			results.push(messagesJob(job));
			break;
		case "constants":
			results.push({ SUMMARIZATION_SYSTEM_PROMPT: UTILS.SUMMARIZATION_SYSTEM_PROMPT });
			break;
		default:
			throw new Error(`unknown op ${job.op}`);
	}
}
process.stdout.write(JSON.stringify(results));

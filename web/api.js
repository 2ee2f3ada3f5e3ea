// api.js - the dashboard's only door to dnnsatd: JSON requests with an
// AbortSignal, and API errors (application/problem+json) turned into
// ApiError objects that keep the problem's title, detail and path.

export class ApiError extends Error {
	constructor(status, problem) {
		super(problem.detail || problem.title || `HTTP ${status}`);
		this.name = 'ApiError';
		this.status = status;
		this.title = problem.title || `HTTP ${status}`;
		this.detail = problem.detail || '';
		this.path = problem.path || '';
		// seconds after which the same request may succeed (a 429 or 503
		// with Retry-After: a busy or stopping server), else 0
		this.retryAfter = Number(problem.retry_after) || 0;
	}
}

// Sends a request and answers {status, data}; a 4xx/5xx answer throws an
// ApiError, an aborted request throws the AbortError of fetch.
export async function request(path, { method = 'GET', body, signal } = {}) {
	const init = { method, signal, headers: { Accept: 'application/json' } };
	if (body !== undefined) {
		init.headers['Content-Type'] = 'application/json';
		init.body = JSON.stringify(body);
	}
	return answer(await fetch(path, init));
}

// {status, data} of a fetch response, or the ApiError of a 4xx/5xx.
async function answer(res) {
	const text = await res.text();
	let data = null;
	try {
		data = text ? JSON.parse(text) : null;
	} catch {
		data = { detail: text.slice(0, 300) };
	}
	if (!res.ok)
		throw new ApiError(res.status, data || {});
	return { status: res.status, data };
}

// Uploads a model file (a File) to POST /v1/models: an .onnx file as its
// bytes (application/onnx), any other as a JSON model. Answers {status,
// data}: 201 stored, 200 stored already; data is the model's metadata
// with its "id".
export async function uploadModel(file, { signal } = {}) {
	const onnx = /\.onnx$/i.test(file.name);
	return answer(await fetch('/v1/models', {
		method: 'POST', signal, body: await file.arrayBuffer(),
		headers: { Accept: 'application/json', 'Content-Type': onnx ? 'application/onnx' : 'application/json' },
	}));
}

export const isAbort = (e) => e && e.name === 'AbortError';

// Waits ms milliseconds; an abort of `signal` ends the wait with its
// AbortError.
export function pause(ms, signal) {
	return new Promise((resolve, reject) => {
		const done = () => {
			clearTimeout(t);
			reject(signal.reason);
		};
		const t = setTimeout(() => {
			signal.removeEventListener('abort', done);
			resolve();
		}, ms);
		if (signal.aborted)
			done();
		else
			signal.addEventListener('abort', done, { once: true });
	});
}

// The query string of a configuration for GET .../check: numbers and
// strings as they are, a nested choice (an object) as its JSON text.
export function configQuery(config) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(config))
		q.append(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
	return q.toString();
}

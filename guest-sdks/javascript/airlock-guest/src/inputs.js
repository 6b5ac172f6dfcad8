// What one round knows: the client's answers by key, the state the tool
// returned last round, and what the client can answer. Shared by tool calls,
// prompt requests and resource reads.

const decoder = new TextDecoder();

/** One round: its number, the answers by key, the state, the client. */
export class Inputs {
  constructor(round) {
    this.wit = round;
    this.responses = new Map(round.responses);
  }

  get round() {
    return this.wit.number;
  }

  get isTask() {
    return this.wit.task;
  }

  get client() {
    const caps = this.wit.client;
    return {
      canElicitForm: caps.elicitationForm,
      canElicitUrl: caps.elicitationUrl,
      canSample: caps.sampling,
      canSampleWithTools: caps.samplingTools,
      canSampleWithContext: caps.samplingContext,
      canListRoots: caps.roots,
      canUseTasks: caps.tasks,
    };
  }

  get stateBytes() {
    return this.wit.state;
  }

  state(fallback = undefined) {
    if (this.wit.state === undefined) return fallback;
    try {
      return JSON.parse(decoder.decode(this.wit.state));
    } catch {
      return fallback;
    }
  }

  response(key) {
    return this.responses.get(key);
  }

  elicitation(key) {
    const answer = this.responses.get(key);
    if (answer?.tag !== "elicitation") return undefined;
    const { action, content } = answer.val;
    const parsed = content === undefined ? undefined : JSON.parse(content);
    return {
      action,
      content: parsed,
      accepted: action === "accept",
      acceptedContent: () => (action === "accept" ? parsed : undefined),
    };
  }

  sampling(key) {
    const answer = this.responses.get(key);
    if (answer?.tag !== "sampling") return undefined;
    const { model, stopReason, content } = answer.val;
    return {
      model,
      stopReason,
      content,
      text: content.filter((b) => b.tag === "text").map((b) => b.val.text).join(""),
      toolUses: content.filter((b) => b.tag === "tool-use").map((b) => b.val),
    };
  }

  roots(key) {
    const answer = this.responses.get(key);
    return answer?.tag === "roots" ? answer.val.map(({ uri, name }) => ({ uri, name })) : undefined;
  }
}

// The decision logic moved to @regulon/conventions (the Cache's replicated redis shares it);
// this name stays for the neutral modules that name its types.
export type { Member, Plan, PlanInput, Role, Server, Step, Topology } from '@regulon/conventions';

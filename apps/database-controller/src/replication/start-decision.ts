// Moved to @regulon/conventions (the Cache's replicated redis shares it); this name stays for the engines' start scripts.
export { renderRoleDecision } from '@regulon/conventions';

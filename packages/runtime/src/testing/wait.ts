export { eventually } from '@regulon/testenv';

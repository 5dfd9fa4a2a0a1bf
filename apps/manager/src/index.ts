export { CONTROLLERS, type ControllerRegistration } from './controllers.ts';
export { OPTIONS, inCluster, ownNamespace } from './options.ts';
export { run } from './run.ts';

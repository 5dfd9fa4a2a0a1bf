export { CONTROLLERS, type ControllerRegistration } from './controllers.ts';
export { OPTIONS } from './options.ts';
export { run } from './run.ts';
// Where a controller's options sit in OPTIONS, for the manifest generator: the one conversion.
export { controllerOptionKeys, defineOptions, inCluster, ownNamespace, runCli } from '@regulon/options';

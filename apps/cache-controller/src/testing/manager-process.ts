// The Cache controller alone in a process, for the replicated redis test's
// partition scenario (see @regulon/conventions' runManagerProcess).
import { runManagerProcess } from '@regulon/conventions';
import { ImageCatalog } from '@regulon/image-catalog';
import { setupCacheController } from '../index.ts';

await runManagerProcess((mgr, options) => {
  const { catalog, instanceAgentImage } = options as { catalog: unknown; instanceAgentImage?: string };
  setupCacheController(mgr, {
    imageCatalog: ImageCatalog.fromDocument(catalog, 'the test manager process'),
    instanceAgentImage,
  });
});

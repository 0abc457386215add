/** The pod class catalogue of decisions.md: cpu in millicores, memory in MiB. */
export interface PodClass {
  cpu_request_m: number;
  cpu_limit_m: number;
  memory_request_mib: number;
  memory_limit_mib: number;
}

const pc = (cr: number, cl: number, mr: number, ml: number): PodClass => ({
  cpu_request_m: cr,
  cpu_limit_m: cl,
  memory_request_mib: mr,
  memory_limit_mib: ml,
});

export const POD_CLASSES = {
  'm1.small': pc(125, 250, 256, 384),
  'm1.medium': pc(250, 500, 512, 768),
  'm1.large': pc(500, 1000, 1024, 1536),
  'c1.small': pc(250, 375, 256, 384),
  'c1.medium': pc(500, 750, 512, 768),
  'c1.large': pc(1000, 1500, 1024, 1536),
  'r1.small': pc(125, 250, 1024, 1536),
  'r1.medium': pc(250, 500, 1536, 2304),
  'r1.large': pc(500, 1000, 2048, 3072),
  'r1.xlarge': pc(750, 1500, 2048, 3072),
  'r1.2xlarge': pc(1500, 1500, 4096, 4096),
} as const satisfies Record<string, PodClass>;

export type PodClassName = keyof typeof POD_CLASSES;
export const DEFAULT_POD_CLASS: PodClassName = 'm1.large';
export const POD_CLASS_NAMES = Object.keys(POD_CLASSES) as PodClassName[];

export function podClassOf(classes: Record<string, string>, processType: string): PodClass {
  const name = (classes[processType] ?? DEFAULT_POD_CLASS) as PodClassName;
  return POD_CLASSES[name] ?? POD_CLASSES[DEFAULT_POD_CLASS];
}

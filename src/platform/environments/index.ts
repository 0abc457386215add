// Environment facts every layer needs (the modules below the pipeline, the access rules, the pipeline
// itself): which environment is an application's production, and how far an environment is trusted.
export * from './environment-trust.js';
export * from './production-environment.js';

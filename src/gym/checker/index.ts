export { checkEnv, formatCheckReport, type CheckEnvOptions, type CheckEnvReport, type CheckResult } from './check-env.ts';
export { checkSpace, checkObs, checkRenderReturn, envResetPassiveChecker, envStepPassiveChecker, envRenderPassiveChecker } from './passive-checks.ts';

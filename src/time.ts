/** Wire timestamps are Unix seconds (spec: "timestamps in objects are Unix seconds"). */
export const toUnixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);
